/**
 * An archive of N photos for the scale bench (`npm run bench:scale`), its ledger written by
 * darkroom's own code: a synthetic walk (names in nested folders, sizes, times and content
 * hashes, as inputs/discover.ts would find them) reconciled by the ledger's discovery
 * (ledger/discovery.ts), named by the output writer (outputs/writer.ts afterDiscovery), then
 * each photo taken through the ledger's API as the stages take it (upload, create, polls,
 * SUCCESS, the output claimed, recorded with its checksums and done), its calls logged, and
 * some reviewed. A night's ledger months in: most photos done with outputs and their
 * checksums, some failed, held, skipped, duplicates, accepted and rejected in review, the
 * last few percent still to do.
 *
 * The inputs are not written by default: a million small files are ~4 GB of blocks and
 * minutes of writing, and only `plan` reads them (`--inputs` writes them: tiny PNGs whose
 * bytes are the hashes the ledger recorded). The outputs are written, as hard links to 32
 * small JPEGs (no data blocks of their own), so `manifest`, `report` and `review` find real
 * files where the ledger says they are.
 *
 * The archive is kept (in $DARKROOM_SCALE_DIR, else the temp folder) and reused while its
 * recipe is unchanged: a million photos take minutes to seed.
 *
 *   tsx bench/scale/seed.ts --photos N [--dir D] [--fresh] [--inputs]
 */
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { existsSync, linkSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import sharp from 'sharp';
import { installClock, VirtualClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config/index.js';
import { Ledger, type ItemRow } from '../../src/ledger/index.js';
import { silentLogger } from '../../src/log.js';
import { namingOptions, outputTargets } from '../../src/outputs/naming.js';
import { OutputWriter } from '../../src/outputs/writer.js';
import { tinyPng } from '../photos.js';

/** Bumped whenever what the seed writes changes: an archive of another recipe is made again. */
const RECIPE = 2;
const KEYS = ['k_scale_a', 'k_scale_b', 'k_scale_c', 'k_scale_d'];
/** Distinct output files, each hard-linked under many names (ext4 allows 65,000 links a file). */
const OUTPUT_KINDS = 32;
/** Photos recorded in one transaction. */
const BATCH = 5_000;
/** Each photo's work, in virtual time: four keys at ~1,000 calls an hour, ~3.1 calls a photo. */
const PHOTO_MS = 2_800;
/**
 * Where the seed's virtual clock starts. A million photos take it some 15 months on; its history
 * must end before the bench runs, or its calls, in the future, all count in `status`'s last
 * hour (recipe 1 started in January 2026 and ran into 2027: 280,000 calls a key "in the last
 * hour", where a real key can have made 1,000).
 */
const START_MS = Date.UTC(2024, 0, 5, 19, 0);

export interface SeedCounts {
  readonly names: number;
  readonly items: number;
  readonly done: number;
  readonly failed: number;
  readonly held: number;
  readonly skipped: number;
  readonly pending: number;
  readonly accepted: number;
  readonly rejected: number;
  /** Done photos whose output was recorded without checksums (as before migration 009). */
  readonly unhashed: number;
}

export interface ScaleArchive {
  readonly dir: string;
  readonly jobs: string;
  readonly ledger: string;
  readonly inputDir: string;
  readonly outputDir: string;
  readonly photos: number;
  readonly counts: SeedCounts;
  /** Seconds the seed took (when it was made). */
  readonly seedS: number;
  /** Whether the input files are on disk (`--inputs`). */
  readonly inputs: boolean;
  /** The ledger's size on disk, bytes (with its WAL, checkpointed). */
  readonly ledgerBytes: number;
  readonly recipe: number;
}

/** What photo `i` of the walk is: its fate in the ledger, decided by a hash of i (the same on every seed). */
type Fate = 'done' | 'failed' | 'held' | 'skipped' | 'duplicate' | 'queued' | 'uploaded' | 'active' | 'succeeded';

function fateOf(i: number, n: number): { fate: Fate; r: number } {
  const r = createHash('sha1').update(`fate ${i}`).digest().readUInt32BE(0) % 10_000;
  if (r < 50) return { fate: 'skipped', r };
  if (r < 200) return { fate: 'failed', r };
  if (r < 220) return { fate: 'held', r };
  if (r < 240 && i > 0) return { fate: 'duplicate', r };
  // The run is still going: the last 5 % of the walk not finished yet.
  if (i >= Math.floor(n * 0.95)) return { fate: r < 300 ? 'active' : r < 330 ? 'succeeded' : r < 360 ? 'uploaded' : 'queued', r };
  return { fate: 'done', r };
}

/** Photo `i`'s name: collections of negatives by year and roll, ~1,000 frames a folder at a million. */
function scalePath(i: number, n: number): string {
  const perFolder = Math.max(10, Math.round(n / 1000));
  const folder = Math.floor(i / perFolder);
  const collection = `collection-${String(folder % 10).padStart(2, '0')}`;
  const year = 1940 + (Math.floor(folder / 10) % 50);
  const roll = `roll-${String(folder).padStart(4, '0')}`;
  return `${collection}/${year}/${roll}/frame-${String(i).padStart(7, '0')}.png`;
}

/** The bytes of photo `i` (a duplicate has its predecessor's). */
function inputBytes(i: number, fate: Fate): Buffer {
  return tinyPng(fate === 'duplicate' ? i - 1 : i);
}

const MTIME_MS = Date.UTC(2025, 5, 1);

function sha(alg: 'sha256' | 'sha512', b: Buffer): string {
  return createHash(alg).update(b).digest('hex');
}

function inOneTransaction(ledger: Ledger, fn: () => void): void {
  // Bench only: the Ledger has no batch API; its own transactions nest as savepoints.
  (ledger as unknown as { db: Database.Database }).db.transaction(fn)();
}

function dbOf(ledger: Ledger): Database.Database {
  return (ledger as unknown as { db: Database.Database }).db;
}

interface OutputKind {
  readonly file: string;
  readonly bytes: number;
  readonly sha256: string;
  readonly sha512: string;
}

async function outputKinds(dir: string): Promise<OutputKind[]> {
  mkdirSync(dir, { recursive: true });
  const kinds: OutputKind[] = [];
  for (let k = 0; k < OUTPUT_KINDS; k++) {
    const file = path.join(dir, `kind-${k}.jpg`);
    const bg = { r: (k * 37) % 256, g: (k * 71) % 256, b: (k * 113) % 256 };
    await sharp({ create: { width: 96, height: 64, channels: 3, background: bg } })
      .jpeg({ quality: 80 })
      .toFile(file);
    const b = readFileSync(file);
    kinds.push({ file, bytes: b.length, sha256: sha('sha256', b), sha512: sha('sha512', b) });
  }
  writtenBefore(dir);
  return kinds;
}

/**
 * The outputs' time, as a run leaves it: written before the ledger recorded them (their links
 * share it). Set again on reuse: an archive copied or unpacked elsewhere has new times.
 */
function writtenBefore(dir: string): void {
  const t = new Date(START_MS - 86_400_000);
  for (let k = 0; k < OUTPUT_KINDS; k++) {
    const file = path.join(dir, `kind-${k}.jpg`);
    if (existsSync(file)) utimesSync(file, t, t);
  }
}

/** The synthetic walk, photos `from` to `to`: what discovery finds under input.dir, in path order. */
function walk(from: number, to: number, n: number, inputDir: string) {
  return Array.from({ length: to - from }, (_, k) => {
    const i = from + k;
    const { fate } = fateOf(i, n);
    const bytes = inputBytes(i, fate);
    const name = scalePath(i, n);
    return {
      name,
      src: path.join(inputDir, name),
      sizeBytes: bytes.length,
      mtimeMs: MTIME_MS,
      contentHash: sha('sha256', bytes),
      skipReason: fate === 'skipped' ? 'not an image darkroom can send (the file is a text file named .png)' : null,
    };
  });
}

/** The walk recorded as a run's discovery records it: a batch at a time (ledger/discovery.ts DiscoveryPass), then ended. */
function recordWalk(ledger: Ledger, photos: number, inputDir: string): void {
  const pass = ledger.discovery.begin();
  for (let from = 0; from < photos; from += 10_000) {
    const found = walk(from, Math.min(photos, from + 10_000), photos, inputDir);
    pass.record(found, [], { keyFps: KEYS });
    ledger.checks.record(found.filter((f) => f.skipReason === null).map((f) => ({ contentHash: f.contentHash, reason: null })));
  }
  pass.end({ keyFps: KEYS });
}

function writeInputs(n: number, inputDir: string): void {
  const made = new Set<string>();
  const t = new Date(MTIME_MS);
  for (let i = 0; i < n; i++) {
    const file = path.join(inputDir, scalePath(i, n));
    const sub = path.dirname(file);
    if (!made.has(sub)) {
      mkdirSync(sub, { recursive: true });
      made.add(sub);
    }
    writeFileSync(file, inputBytes(i, fateOf(i, n).fate));
    utimesSync(file, t, t);
  }
}

/** The work of one photo, through the ledger's API as the stages do it. */
class Worker {
  private call = 0;

  constructor(
    private readonly ledger: Ledger,
    private readonly clock: VirtualClock,
    private readonly outputDir: string,
    private readonly naming: ReturnType<typeof namingOptions>,
    private readonly kinds: readonly OutputKind[],
  ) {}

  private log(keyFp: string, method: string, endpoint: string): void {
    this.call++;
    this.ledger.calls.log({
      at_ms: this.clock.now(),
      key_fp: keyFp,
      method,
      endpoint,
      http_status: 200,
      code: 0,
      request_id: `srv-${this.call}`,
      sent_request_id: `dr-${this.call}`,
      duration_ms: 140,
      error: null,
    });
  }

  private tick(ms: number): void {
    this.clock.advanceBy(ms);
  }

  private get(id: number): ItemRow {
    return this.ledger.items.get(id)!;
  }

  /** queued → uploaded → submitting → active; returns the submission. */
  private upToCreate(id: number, key: string): number {
    const l = this.ledger;
    l.items.move(id, 'queued', 'uploading', { key_fp: key });
    this.log(key, 'POST', '/api/v1/image/upload');
    this.tick(300);
    const url = `https://cdn.example.com/u/${id}.png`;
    l.items.move(id, 'uploading', 'uploaded', { image_url: url, input_url: url });
    this.tick(200);
    return l.submissions.begin(this.get(id), 'restore', key, `dr-create-${id}`);
  }

  private accept(id: number, sub: number, key: string): ItemRow {
    this.log(key, 'POST', '/api/v1/image/restore');
    return this.ledger.submissions.accept(sub, this.get(id), {
      taskId: `task-${id}`,
      businessType: 'RESTORE',
      responseRequestId: `srv-create-${id}`,
      waitHintMs: 18_000,
      pollAtMs: this.clock.now() + 18_000,
    });
  }

  photo(id: number, fate: Fate, r: number): void {
    const key = KEYS[id % KEYS.length]!;
    const l = this.ledger;
    if (fate === 'queued' || fate === 'skipped' || fate === 'duplicate') return;
    this.tick(PHOTO_MS);
    const sub = this.upToCreate(id, key);
    if (fate === 'uploaded') {
      // A create refused for a busy slot: back to wait (the submission resolved as not created).
      const busy = { httpStatus: 429, code: null, responseRequestId: null, error: 'the key has 3 tasks active' };
      l.submissions.reject(sub, this.get(id), busy, 'uploaded', this.clock.now() + 5_000, 'the key has 3 tasks active');
      return;
    }
    if (fate === 'held') {
      const err = { httpStatus: null, code: null, responseRequestId: null, error: 'socket hang up after the request was sent' };
      l.submissions.ambiguous(sub, this.get(id), err, 'create outcome unknown: the connection was reset after the request was sent');
      return;
    }
    this.accept(id, sub, key);
    this.tick(9_000);
    this.log(key, 'GET', '/api/v1/tasks/{businessType}/{taskId}');
    l.tasks.polled(this.get(id), 'RUNNING', this.clock.now() + 9_000);
    if (fate === 'active') return;
    this.tick(9_000);
    this.log(key, 'GET', '/api/v1/tasks/{businessType}/{taskId}');
    if (fate === 'failed') {
      l.tasks.failed(this.get(id), 'ERROR', 'the service ended the task with ERROR: the image could not be processed');
      return;
    }
    const item = l.tasks.succeeded(this.get(id), `https://results.example.com/r/${id}.jpg`, true);
    if (fate === 'succeeded') return;
    this.done(item, r);
  }

  private done(succeeded: ItemRow, r: number): void {
    const l = this.ledger;
    const item = l.outputs.start(succeeded);
    const targets = outputTargets(l, item, 'jpg', this.outputDir, this.naming);
    const kind = this.kinds[item.id % this.kinds.length]!;
    const unhashed = r >= 1400 && r < 1410;
    const noted = r >= 1410 && r < 1460;
    for (const [n, t] of targets.entries()) {
      if (n === 0 && l.outputs.claim(item, t.path) !== undefined) throw new Error(`${t.path} claimed twice`);
      mkdirSync(path.dirname(t.path), { recursive: true });
      linkSync(kind.file, t.path);
      l.outputFiles.recordFile({
        path: t.path,
        itemId: item.id,
        inputId: t.input?.id ?? null,
        kind: 'output',
        stepIndex: 0,
        bytes: kind.bytes,
        ...(unhashed ? {} : { sha256: kind.sha256, sha512: kind.sha512 }),
        meta: noted
          ? { level: 'provenance', note: "the input's EXIF is damaged (IFD0 ends past the file)", dateTaken: null, caption: null }
          : { level: 'all', note: null, dateTaken: `${1940 + (item.id % 50)}:06:01 12:00:00`, caption: `Frame ${item.id}` },
      });
    }
    const done = l.outputs.done(item, targets[0]!.path);
    const sha256 = unhashed ? null : kind.sha256;
    if (r >= 300 && r < 1300) l.reviews.record(done.id, 'accept', sha256);
    else if (r >= 1300 && r < 1400) l.reviews.record(done.id, 'reject', sha256, 'too dark: the shadows are crushed');
  }
}

function countsOf(ledger: Ledger, names: number): SeedCounts {
  const s = ledger.status();
  const review = s.review;
  const unhashed = (
    dbOf(ledger)
      .prepare(
        "SELECT COUNT(*) AS n FROM items i JOIN output_files f ON f.path = i.output_path WHERE i.state = 'done' AND f.sha256 IS NULL",
      )
      .get() as { n: number }
  ).n;
  return {
    names,
    items: s.total + s.skipped + s.gone,
    done: s.done,
    failed: s.failed,
    held: s.held,
    skipped: s.skipped,
    pending: s.pending,
    accepted: review.accepted,
    rejected: review.rejected,
    unhashed,
  };
}

export function sizeOnDisk(file: string): number {
  return [file, `${file}-wal`, `${file}-shm`].reduce((sum, f) => sum + (existsSync(f) ? statSync(f).size : 0), 0);
}

/**
 * The ledger's schema made the one of the darkroom about to be measured (its `migrations/`
 * beside its `bin/`): the archive is seeded by this code, and the code before a migration
 * refuses a ledger that has it (LedgerTooNewError). A migration it does not know is undone
 * (its triggers, indexes, tables and columns dropped: the rows they kept are the same); one it
 * knows and the ledger has not is applied by that darkroom itself, as its run would.
 */
export function alignSchema(ledgerFile: string, bin: string): void {
  const dir = path.join(path.dirname(bin), '..', 'migrations');
  const known = readdirSync(dir)
    .filter((f) => /^\d{3}_[a-z0-9_]+\.sql$/.test(f))
    .sort();
  const know = Number(known.at(-1)!.slice(0, 3));
  const db = new Database(ledgerFile);
  try {
    const have = (db.prepare('SELECT MAX(version) AS v FROM schema_migrations').get() as { v: number }).v;
    if (have > know) {
      const ours = readdirSync(new URL('../../migrations/', import.meta.url)).filter(
        (f) => /^\d{3}_/.test(f) && Number(f.slice(0, 3)) > know,
      );
      db.transaction(() => {
        for (const f of ours.sort().reverse()) undoMigration(db, readFileSync(new URL(`../../migrations/${f}`, import.meta.url), 'utf8'));
        db.prepare('DELETE FROM schema_migrations WHERE version > ?').run(know);
      })();
    }
  } finally {
    db.close();
  }
  // Older than what that darkroom knows: opened by it, as a run would, which migrates it.
  const ledger = pathToFileURL(path.join(path.dirname(bin), '..', 'dist', 'ledger', 'index.js')).href;
  execFileSync(process.execPath, [
    '--input-type=module',
    '-e',
    `const { Ledger } = await import(${JSON.stringify(ledger)}); Ledger.open(${JSON.stringify(ledgerFile)}).close();`,
  ]);
}

function undoMigration(db: Database.Database, sql: string): void {
  const names = (kind: string) =>
    [...sql.matchAll(new RegExp(`CREATE (?:UNIQUE )?${kind} (?:IF NOT EXISTS )?(\\w+)`, 'g'))].map((m) => m[1]!);
  for (const t of names('TRIGGER')) db.exec(`DROP TRIGGER IF EXISTS ${t}`);
  for (const i of names('INDEX')) db.exec(`DROP INDEX IF EXISTS ${i}`);
  for (const t of names('TABLE')) db.exec(`DROP TABLE IF EXISTS ${t}`);
  for (const m of sql.matchAll(/ALTER TABLE (\w+) ADD COLUMN (\w+)/g)) db.exec(`ALTER TABLE ${m[1]} DROP COLUMN ${m[2]}`);
}

function scaleDir(photos: number, dir?: string): string {
  return dir ?? path.join(process.env['DARKROOM_SCALE_DIR'] ?? tmpdir(), `darkroom-scale-${photos}`);
}

/** The archive of `photos` photos, made unless one of this recipe is there already. */
export async function seedArchive(
  photos: number,
  opts: { dir?: string; fresh?: boolean; inputs?: boolean; say?: (s: string) => void } = {},
): Promise<ScaleArchive> {
  const dir = scaleDir(photos, opts.dir);
  const say = opts.say ?? (() => {});
  const manifest = path.join(dir, 'seed.json');
  if (!opts.fresh && existsSync(manifest)) {
    const prior = JSON.parse(readFileSync(manifest, 'utf8')) as ScaleArchive;
    if (prior.recipe === RECIPE && prior.photos === photos && (prior.inputs || !opts.inputs)) {
      writtenBefore(path.join(dir, 'sources'));
      return prior;
    }
  }
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const inputDir = path.join(dir, 'archive');
  mkdirSync(inputDir, { recursive: true });
  const jobs = path.join(dir, 'jobs.yaml');
  writeFileSync(
    jobs,
    'input: { dir: ./archive }\noutput: { dir: ./restored, metadata: all }\nsteps: [{ capability: restore }]\nledger: ./darkroom.db\n',
  );
  const started = performance.now();
  if (opts.inputs) {
    say(`writing ${photos} input files`);
    writeInputs(photos, inputDir);
  }
  const kinds = await outputKinds(path.join(dir, 'sources'));
  const vclock = new VirtualClock(START_MS);
  const restore = installClock(vclock);
  const config = loadConfig(jobs, { env: {} });
  const ledger = Ledger.open(config.ledger);
  try {
    // Bench only: the seed's commits need not survive a power cut.
    dbOf(ledger).pragma('synchronous = OFF');
    say(`recording ${photos} names (ledger/discovery.ts)`);
    recordWalk(ledger, photos, inputDir);
    await new OutputWriter(config, ledger, silentLogger()).afterDiscovery();
    const worker = new Worker(ledger, vclock, config.output.dir, namingOptions(config), kinds);
    const ids = dbOf(ledger).prepare('SELECT id FROM items WHERE rel_path = ?').pluck();
    for (let from = 0; from < photos; from += BATCH) {
      inOneTransaction(ledger, () => {
        for (let i = from; i < Math.min(photos, from + BATCH); i++) {
          const { fate, r } = fateOf(i, photos);
          const id = ids.get(scalePath(i, photos)) as number | undefined;
          if (id !== undefined) worker.photo(id, fate, r);
          // Nights of work: 12 hours on, 12 off.
          if ((vclock.now() - START_MS) % 86_400_000 > 43_200_000) vclock.advanceBy(43_200_000);
        }
      });
      if ((from / BATCH) % 20 === 0) say(`  ${from + BATCH} of ${photos} photos taken through the stages`);
    }
    const counts = countsOf(ledger, photos);
    dbOf(ledger).pragma('wal_checkpoint(TRUNCATE)');
    ledger.close();
    const archive: ScaleArchive = {
      dir,
      jobs,
      ledger: config.ledger,
      inputDir,
      outputDir: config.output.dir,
      photos,
      counts,
      seedS: (performance.now() - started) / 1000,
      inputs: opts.inputs ?? false,
      ledgerBytes: sizeOnDisk(config.ledger),
      recipe: RECIPE,
    };
    writeFileSync(manifest, JSON.stringify(archive, null, 2));
    return archive;
  } finally {
    if (ledger) ledger.close();
    restore();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({
    options: {
      photos: { type: 'string', default: '100000' },
      dir: { type: 'string' },
      fresh: { type: 'boolean', default: false },
      inputs: { type: 'boolean', default: false },
    },
  });
  const a = await seedArchive(Number(values.photos), {
    ...(values.dir ? { dir: values.dir } : {}),
    fresh: values.fresh,
    inputs: values.inputs,
    say: (s) => console.log(s),
  });
  console.log(JSON.stringify(a, null, 2));
}
