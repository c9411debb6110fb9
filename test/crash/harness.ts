/**
 * The crash test (issue 4, point 9): the real CLI (bin/darkroom.js, built) against the HTTP
 * simulator under the hostile fault profile, killed with SIGKILL again and again, restarted
 * each time until the job is finished; then the result is compared with a clean run's.
 *
 * Kills come two ways, alternating at random:
 * - `DARKROOM_CRASH_AT=<phase>:<n>` (src/ledger/crashpoint.ts): the process kills itself at
 *   the n-th upload answer, create answer, poll answer, download (temp file written, not yet
 *   renamed), output (renamed, not yet marked done) or ledger write (inside a transaction).
 *   Phases are taken in turn, so every one of them is hit; n is drawn so the kills spread
 *   over the whole job rather than bunching at its start.
 * - a SIGKILL from outside after a random delay: whatever the process was doing.
 *
 * Held photos (a create whose answer was lost, to the fault or to a kill) are checked to be
 * listed by `darkroom status` with their reason, then released by `darkroom retry --held
 * --yes` — an operator's decision, so their second create is expected — and the loop goes
 * on until every photo is done.
 *
 * What is checked at the end: every input has exactly one output, whole, decoding to the
 * clean run's pixels and carrying its input's metadata as the clean run's does (the inputs
 * carry dates, captions, keywords, GPS and a thumbnail, written by ExifTool; the tasks'
 * ids and times differ between the runs, so the bytes do); the simulator's audit shows one create per photo except photos the ledger
 * held as ambiguous (or whose task vanished and was, as recorded, created again); no
 * create the ledger does not know of; no temp file left; `PRAGMA integrity_check` ok; and
 * the key's limits held across every kill, as the simulator counts them: never more calls
 * in any rolling minute or hour than the limits, never more tasks at once, no 429 from the
 * simulator's own call windows (the injected ones apart), and a 429 on api_key_active_tasks
 * only as the answer to a probe (a create into a slot counted busy only by held creates or a
 * stopped run's, each one said in the runs' log): asked for, it costs a call and no credit.
 * The runs of the crash loop share one key store (DARKROOM_STATE_DIR), as runs on one
 * machine do.
 */
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { stringify } from 'yaml';
import { fingerprintKey } from '../../src/spec/key.js';
import { CRASH_PHASES, type CrashPhase } from '../../src/ledger/crashpoint.js';
import type { FaultConfig, FaultProfileName } from '../../src/sim/faults.js';
import { startSim, type RunningSim } from '../../src/sim/server.js';
import { runCli, type CliResult } from '../helpers/cli.js';
import { makeTempDir, writePhoto } from '../helpers/job.js';
import { Exif, pixelPrint } from '../helpers/metadata.js';
import { Rng } from '../../src/sim/random.js';

export interface CrashTestOptions {
  readonly photos: number;
  /** Kills to make at least; the loop keeps killing until this many SIGKILLs landed. */
  readonly kills: number;
  readonly seed: number;
  /** Fault profile of the hostile simulator. Default 'hostile'. */
  readonly faults?: FaultProfileName | FaultConfig;
  /** Call limits of the simulator and the job (default the spec's 100/min, 1000/h, 3 tasks). */
  readonly limits?: { callsPerMinute: number; callsPerHour: number; activeTasks: number };
  /**
   * The job's polling cap (default 30 min). It also caps how long a create whose answer
   * was lost holds its task slot before any task was seen to end (src/scheduler/budget/keySlots.ts, taskBoundMs):
   * a loop that kills runs before their first task ends may want it short.
   */
  readonly pollCapMinutes?: number;
  /** Median task latency of the simulator, ms. Default 800. */
  readonly latencyMs?: number;
  /** Per-call timeout of the client, ms (the hostile profile's slow answers take 35 s). Default 3000. */
  readonly timeoutMs?: number;
  /**
   * Longest any single run may take before the test gives up on it. Default: the clean
   * run's time (a run not killed may have all the work left) plus twice the polling cap
   * (creates whose answers were lost hold their slots that long before any task was seen
   * to end) plus a minute, and at least 180 s.
   */
  readonly runTimeoutMs?: number;
  readonly log?: (line: string) => void;
}

/** The key's limits as the simulator's audit saw them kept (or not) over the whole crash loop. */
export interface WindowReport {
  readonly limits: { callsPerMinute: number; callsPerHour: number; activeTasks: number };
  readonly calls: number;
  readonly maxCallsInAnyMinute: number;
  readonly maxCallsInAnyHour: number;
  readonly maxActiveTasks: number;
  /** 429s the simulator's own limits gave (injected ones are faults, not violations), by scope. */
  readonly rejectedByScope: Record<string, number>;
  /** Probes the runs made (their log says each): creates a 429 on api_key_active_tasks may answer. */
  readonly probes: number;
  /**
   * Calls beyond the limit in the busiest minute and hour, tasks beyond the limit at the
   * busiest moment, the simulator's own 429s on its call windows, and its 429s on active
   * tasks beyond the probes made: 0 when every limit held.
   */
  readonly violations: number;
}

export interface CrashReport {
  readonly photos: number;
  readonly runs: number;
  readonly kills: number;
  readonly killsByPhase: Record<string, number>;
  /** How many photos had 1, 2, … creates, by the simulator's audit. */
  readonly createsPerPhoto: Record<string, number>;
  /** Photos held (create outcome unknown) at some point, with the reason status gave. */
  readonly held: { path: string; reason: string }[];
  /** Photos whose task vanished and was created again (recorded as EXPIRED). */
  readonly recreatedAfterVanish: number;
  readonly retries: number;
  readonly accountStops: number;
  readonly faults: Record<string, number>;
  readonly integrity: string;
  readonly tempFilesLeft: number;
  /** ExifTool processes left running by a killed run (their parent gone), a second after the loop. */
  readonly orphans: number;
  readonly mismatches: string[];
  readonly problems: string[];
  readonly cleanMs: number;
  readonly crashMs: number;
  readonly windows: WindowReport;
}

const KEY = 'crash-test-key-0f1e2d3c4b5a';
const SPEC_LIMITS = { callsPerMinute: 100, callsPerHour: 1000, activeTasks: 3 };
const TEMP_SUFFIX = '.darkroom-tmp';

/**
 * Photos: distinct small images in nested folders, three formats, some odd names, each with
 * the metadata an archive gives its scans (a date, a caption, keywords, GPS; the JPEGs an
 * EXIF thumbnail too), written by ExifTool.
 */
async function writePhotos(dir: string, n: number, exif: Exif): Promise<string[]> {
  const rels: string[] = [];
  const thumb = path.join(dir, '.thumb.jpg');
  await writePhoto(thumb, 99, 'jpeg');
  for (let i = 0; i < n; i++) {
    const format = i % 5 === 3 ? 'png' : i % 5 === 4 ? 'webp' : 'jpeg';
    const ext = format === 'jpeg' ? 'jpg' : format;
    const folder = i % 4 === 0 ? '' : `roll ${i % 4}/`;
    const name = i % 13 === 7 ? `frame ${i} — “café”` : `frame-${String(i).padStart(3, '0')}`;
    const rel = `${folder}${name}.${ext}`;
    const file = path.join(dir, rel);
    await writePhoto(file, i, format);
    await exif.write(file, [
      `-EXIF:DateTimeOriginal=19${String(50 + (i % 50)).padStart(2, '0')}:0${1 + (i % 9)}:1${i % 10} 12:00:00`,
      `-XMP-dc:Description=Frame ${i} of the ${1950 + (i % 50)} roll`,
      '-XMP-dc:Subject=archive',
      `-XMP-dc:Subject=roll ${i % 4}`,
      '-GPSLatitude=51.5',
      '-GPSLatitudeRef=N',
      '-GPSLongitude=0.12',
      '-GPSLongitudeRef=W',
      ...(format === 'jpeg' ? [`-ThumbnailImage<=${thumb}`, `-IPTC:Caption-Abstract=Frame ${i} of the ${1950 + (i % 50)} roll`] : []),
    ]);
    rels.push(rel);
  }
  rmSync(thumb);
  return rels.sort();
}

/**
 * Why `mine` is not the clean run's `theirs` of the same input, or null: it must decode in
 * full to the same pixels, carry the input's date and caption, no thumbnail, Orientation 1,
 * and say what was done to it as the clean run's output says (tasks' ids and times aside).
 */
async function differs(mine: string, theirs: string, exif: Exif): Promise<string | null> {
  let pixels: [string, string];
  try {
    pixels = [await pixelPrint(mine), await pixelPrint(theirs)];
  } catch (err) {
    return `does not decode (${(err as Error).message})`;
  }
  if (pixels[0] !== pixels[1]) return "its pixels differ from the clean run's";
  const [a, b] = [await exif.read(mine, true), await exif.read(theirs, true)];
  const stable = (t: Record<string, unknown>) =>
    JSON.stringify({
      taken: t['ExifIFD:DateTimeOriginal'],
      caption: t['XMP-dc:Description'] ?? t['IPTC:Caption-Abstract'],
      keywords: t['XMP-dc:Subject'],
      gps: t['GPS:GPSLatitude'],
      orientation: t['IFD0:Orientation'],
      thumbnail: t['IFD1:ThumbnailImage'] ?? null,
      source: t['XMP-iptcExt:DigitalSourceType'],
      derived: t['XMP-xmpMM:DerivedFrom'],
      steps: ((t['XMP-xmpMM:History'] as { Action: string; Parameters: string }[] | undefined) ?? []).map((h) => [
        h.Action,
        h.Parameters.replace(/task=\S+/, 'task'),
      ]),
    });
  if (a['XMP-iptcExt:DigitalSourceType'] === undefined || a['ExifIFD:DateTimeOriginal'] === undefined) return 'it carries no metadata';
  if (stable(a) !== stable(b)) return `its metadata differs from the clean run's: ${stable(a)} vs ${stable(b)}`;
  return null;
}

function jobFile(
  dir: string,
  opts: { timeoutMs: number; limits?: CrashTestOptions['limits']; pollCapMinutes?: number | undefined },
): string {
  const file = path.join(dir, 'jobs.yaml');
  const limits = { ...opts.limits, ...(opts.pollCapMinutes !== undefined ? { pollCapMinutes: opts.pollCapMinutes } : {}) };
  writeFileSync(
    file,
    stringify({
      service: { apiKeyEnv: 'DARKROOM_TEST_KEY', timeoutMs: opts.timeoutMs },
      ...(Object.keys(limits).length > 0 ? { limits } : {}),
      input: { dir: './photos' },
      output: { dir: './out' },
      steps: [{ capability: 'enhance', mode: 'general' }],
      ledger: './state/darkroom.db',
      log: { level: 'info' },
    }),
  );
  return file;
}

/**
 * ExifTool processes whose darkroom is gone. A killed run's ExifTool reads its commands from
 * the run's stdin pipe: the kill closes it and ExifTool ends (and its watchdog ends it within
 * a second or so of its parent's end), but not at once on a loaded machine, so an orphan
 * counts only if it outlives ten seconds. Its environment is PATH and
 * LANG alone (metadata/exiftool.ts), so nothing tells this harness's ExifTools from those of
 * other test files killing runs at the same time: any orphan that lives that long is a fault.
 */
async function orphanExifTools(): Promise<number> {
  if (!existsSync('/proc/self/stat')) return 0;
  let n = 0;
  for (let waited = 0; waited <= 10_000; waited += 500) {
    await new Promise((r) => setTimeout(r, 500));
    n = 0;
    for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
      try {
        const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
        if (!cmd.includes('exiftool') || !cmd.includes('-stay_open')) continue;
        const ppid = Number(
          readFileSync(`/proc/${pid}/stat`, 'utf8')
            .replace(/^.*\) /s, '')
            .split(' ')[1],
        );
        if (ppid <= 1 || !existsSync(`/proc/${ppid}`)) n++;
      } catch {
        // gone meanwhile
      }
    }
    if (n === 0) return 0;
  }
  return n;
}

/** Output files under `out` (temp files apart), by their path without extension. */
function outputs(out: string): { byStem: Map<string, string[]>; temps: string[] } {
  const byStem = new Map<string, string[]>();
  const temps: string[] = [];
  if (!existsSync(out)) return { byStem, temps };
  for (const e of readdirSync(out, { recursive: true, withFileTypes: true })) {
    if (!e.isFile()) continue;
    const rel = path.relative(out, path.join(e.parentPath, e.name)).split(path.sep).join('/');
    if (e.name.endsWith(TEMP_SUFFIX)) {
      temps.push(rel);
      continue;
    }
    const stem = rel.replace(/\.[^./]+$/, '');
    byStem.set(stem, [...(byStem.get(stem) ?? []), rel]);
  }
  return { byStem, temps };
}

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const sourceId = (file: string) => sha(readFileSync(file)).slice(0, 16);

function statusJson(r: CliResult): {
  total: number;
  done: number;
  failed: number;
  held: number;
  pending: number;
  states: Record<string, number>;
  problems: { path: string; state: string; reason: string | null; sentRequestId: string | null }[];
} {
  if (r.code !== 0) throw new Error(`darkroom status failed (exit ${r.code}): ${r.stderr.trim()}`);
  return JSON.parse(r.stdout);
}

/** The kill plan's draws: the simulator's seeded generator, on a stream of its own. */
function rng(seed: number): () => number {
  const r = new Rng(seed, 99);
  return () => r.uniform();
}

/** Typical count of each phase per photo still pending, to spread n over the work left. */
const PER_PHOTO: Record<CrashPhase, number> = { upload: 1, create: 1, poll: 1.5, download: 1, output: 1, ledger: 4 };
/** The n-th occurrence is counted per process: a restart starts counting again, so n stays small. */
const MAX_N: Record<CrashPhase, number> = { upload: 8, create: 8, poll: 12, download: 8, output: 8, ledger: 30 };

export async function crashTest(opts: CrashTestOptions): Promise<CrashReport> {
  const log = opts.log ?? (() => {});
  const timeoutMs = opts.timeoutMs ?? 3000;
  const pollCapMs = (opts.pollCapMinutes ?? 30) * 60_000;
  const simBase = {
    keys: [KEY],
    seed: opts.seed,
    latency: { medianMs: opts.latencyMs ?? 800, sigma: 0.5 },
    ...(opts.limits ? { limits: opts.limits } : {}),
  };
  const root = makeTempDir('darkroom-crash-');
  const problems: string[] = [];
  const sims: RunningSim[] = [];
  const exif = new Exif();
  try {
    const photosDir = path.join(root, 'photos-src');
    const rels = await writePhotos(photosDir, opts.photos, exif);

    // 1. The clean run: no faults, no kills.
    const cleanDir = path.join(root, 'clean');
    mkdirSync(cleanDir);
    cpSync(photosDir, path.join(cleanDir, 'photos'), { recursive: true });
    // The spec's limits: the clean run is only there for the outputs to compare with.
    const cleanJob = jobFile(cleanDir, { timeoutMs: 30_000 });
    const clean = await startSim({ ...simBase, limits: SPEC_LIMITS, faults: 'none' });
    sims.push(clean);
    const t0 = Date.now();
    // Its own key store: the clean run's calls are not the crash loop's to count.
    const cleanEnv = { DARKROOM_TEST_KEY: KEY, DARKROOM_STATE_DIR: path.join(root, 'state-clean') };
    const c = await runCli(['run', cleanJob, '--base-url', clean.apiUrl, '--quiet'], cleanEnv, {
      timeoutMs: (opts.runTimeoutMs ?? 180_000) * 2,
    });
    const cleanMs = Date.now() - t0;
    const runTimeoutMs = opts.runTimeoutMs ?? Math.max(180_000, cleanMs + 2 * pollCapMs + 60_000);
    if (c.code !== 0) throw new Error(`the clean run failed (exit ${c.code}): ${c.stderr.slice(-500)}`);
    log(`clean run: ${opts.photos} photos in ${(cleanMs / 1000).toFixed(1)} s`);

    // 2. The hostile run, killed again and again.
    const dir = path.join(root, 'crash');
    mkdirSync(dir);
    cpSync(photosDir, path.join(dir, 'photos'), { recursive: true });
    const job = jobFile(dir, { timeoutMs, limits: opts.limits, pollCapMinutes: opts.pollCapMinutes });
    const ledgerFile = path.join(dir, 'state', 'darkroom.db');
    // Every run of the loop, and status and retry --held beside them, on one machine's key store.
    const keyState = { DARKROOM_STATE_DIR: path.join(root, 'state-crash') };
    const sim = await startSim({ ...simBase, faults: opts.faults ?? 'hostile' });
    sims.push(sim);
    const random = rng(opts.seed);
    const killsByPhase: Record<string, number> = {};
    let kills = 0;
    let runs = 0;
    let retries = 0;
    let accountStops = 0;
    let nextPhase = 0;
    const held = new Map<string, string>();
    const t1 = Date.now();
    const deadline = t1 + Math.max(600_000, opts.kills * 30_000 + 3 * runTimeoutMs);

    for (;;) {
      if (Date.now() > deadline) throw new Error(`gave up after ${runs} runs and ${kills} kills`);
      const st = existsSync(ledgerFile) ? statusJson(await runCli(['status', job, '--json'], keyState)) : null;
      const pending = st ? st.pending : opts.photos;
      // Photos that will still pass each phase (one step: an upload, a create, a poll, a
      // download and a write each, the ledger on every move): a kill planned past the
      // photos that pass a phase is never reached, and that run finishes everything.
      const n0: Record<string, number> = st?.states ?? { queued: opts.photos };
      const toUpload = (n0.queued ?? 0) + (n0.uploading ?? 0);
      const toCreate = toUpload + (n0.uploaded ?? 0);
      const toPoll = toCreate + (n0.submitting ?? 0) + (n0.active ?? 0);
      const passing: Record<CrashPhase, number> = {
        upload: toUpload,
        create: toCreate,
        poll: toPoll,
        download: pending,
        output: pending,
        ledger: pending,
      };
      const env: Record<string, string> = { DARKROOM_TEST_KEY: KEY, ...keyState };
      let plan = 'none';
      let timer: NodeJS.Timeout | undefined;
      const killing = kills < opts.kills && pending > 0;
      // A kill planned at a phase no photo still has to pass (an upload when all are
      // uploaded), or a timer a quick run outlives, lets that run finish everything: once the
      // photos left are fewer than the kills left, kill inside the run's first state change,
      // which any run with work left reaches (CI ran out of work at 9 of 10 kills).
      const scarce = pending <= opts.kills - kills;
      // Short of work, no timer kills either: a quick run can outlive one.
      const tight = pending <= 2 * (opts.kills - kills);
      const inside = killing && (tight || random() < 0.7);
      if (inside && scarce) {
        env.DARKROOM_CRASH_AT = 'ledger:1';
        plan = env.DARKROOM_CRASH_AT;
      } else if (inside) {
        // The next phase in turn that some photo will still pass.
        let phase = CRASH_PHASES[nextPhase++ % CRASH_PHASES.length]!;
        for (let i = 0; passing[phase] === 0 && i < CRASH_PHASES.length; i++) phase = CRASH_PHASES[nextPhase++ % CRASH_PHASES.length]!;
        const left = Math.max(1, opts.kills - kills);
        const span = Math.max(1, Math.round((2 * pending * PER_PHOTO[phase]) / left));
        const n = 1 + Math.floor(random() * Math.max(1, Math.min(span, MAX_N[phase], passing[phase])));
        env.DARKROOM_CRASH_AT = `${phase}:${n}`;
        plan = env.DARKROOM_CRASH_AT;
      }
      runs++;
      const started = Date.now();
      const p = runCli(['run', job, '--base-url', sim.apiUrl, '--quiet'], env, { timeoutMs: runTimeoutMs });
      if (killing && !inside) {
        const delay = 150 + Math.floor(random() * 2500);
        plan = `timer:${delay}ms`;
        timer = setTimeout(() => p.child.kill('SIGKILL'), delay);
      }
      const r = await p;
      if (timer) clearTimeout(timer);
      if (r.signal === 'SIGKILL') {
        if (plan === 'none' || Date.now() - started >= runTimeoutMs) {
          throw new Error(`run ${runs} hung for ${runTimeoutMs} ms and was killed by the test: ${r.stderr.slice(-800)}`);
        }
        kills++;
        const key = plan.startsWith('timer') ? 'random moment' : plan.split(':')[0]!;
        killsByPhase[key] = (killsByPhase[key] ?? 0) + 1;
        log(`run ${runs}: SIGKILL (${plan}) · kill ${kills}`);
        continue;
      }
      log(`run ${runs}: exit ${r.code}${plan !== 'none' ? ` (plan ${plan} not reached)` : ''}`);
      if (r.code === 3) {
        accountStops++; // an injected 24403: the account "recovers", run again
        continue;
      }
      if (r.code !== 0 && r.code !== 1) throw new Error(`run ${runs} exited ${r.code}: ${r.stderr.slice(-800)}`);
      const s = statusJson(await runCli(['status', job, '--json'], keyState));
      if (s.pending > 0) continue;
      if (s.failed > 0) {
        throw new Error(`photos failed: ${JSON.stringify(s.problems.filter((x) => x.state !== 'held'))}`);
      }
      if (s.held === 0) break;
      // Every held photo is listed by status, with its reason and the X-Request-Id sent.
      const human = (await runCli(['status', job], keyState)).stdout;
      for (const h of s.problems.filter((x) => x.state === 'held')) {
        if (!h.reason || !h.sentRequestId) problems.push(`held ${h.path} listed without reason or X-Request-Id`);
        if (!human.includes(h.path) || !human.includes(h.sentRequestId ?? '\u0000'))
          problems.push(`held ${h.path} missing from \`darkroom status\``);
        held.set(h.path, h.reason ?? '');
      }
      const rt = await runCli(['retry', '--held', '--yes', job], keyState);
      if (rt.code !== 0) throw new Error(`retry --held failed: ${rt.stderr}`);
      retries++;
      log(`retry --held: ${s.held} photo(s) re-queued`);
    }
    const crashMs = Date.now() - t1;

    // 3. The checks.
    const db = new Database(ledgerFile, { readonly: true, fileMustExist: true });
    let integrity: string;
    let recreatedAfterVanish = 0;
    const ledgerFacts = new Map<string, { accepted: number; ambiguous: number; expired: number }>();
    try {
      integrity = db.pragma('integrity_check', { simple: true }) as string;
      for (const row of db
        .prepare(
          `SELECT i.rel_path AS path,
                  (SELECT COUNT(*) FROM submissions s WHERE s.item_id = i.id AND s.state = 'accepted') AS accepted,
                  (SELECT COUNT(*) FROM submissions s WHERE s.item_id = i.id AND s.state = 'ambiguous') AS ambiguous,
                  (SELECT COUNT(*) FROM attempts a WHERE a.item_id = i.id AND a.status = 'EXPIRED') AS expired
           FROM items i`,
        )
        .all() as { path: string; accepted: number; ambiguous: number; expired: number }[]) {
        ledgerFacts.set(row.path, row);
      }
    } finally {
      db.close();
    }
    const audit = sim.model.audit();
    const createsHistogram: Record<string, number> = {};
    const mismatches: string[] = [];
    const cleanOut = outputs(path.join(cleanDir, 'out'));
    const crashOut = outputs(path.join(dir, 'out'));
    for (const rel of rels) {
      const stem = rel.replace(/\.[^./]+$/, '');
      const mine = crashOut.byStem.get(stem) ?? [];
      const theirs = cleanOut.byStem.get(stem) ?? [];
      if (mine.length !== 1) mismatches.push(`${rel}: ${mine.length} outputs (${mine.join(', ')})`);
      else if (theirs.length !== 1) mismatches.push(`${rel}: the clean run has ${theirs.length} outputs`);
      else if (mine[0] !== theirs[0]) mismatches.push(`${rel}: output ${mine[0]} but the clean run wrote ${theirs[0]}`);
      else {
        const why = await differs(path.join(dir, 'out', mine[0]!), path.join(cleanDir, 'out', theirs[0]!), exif);
        if (why !== null) mismatches.push(`${rel}: ${why}`);
      }
      const creates = audit.createsPerSource[sourceId(path.join(dir, 'photos', rel))] ?? 0;
      createsHistogram[String(creates)] = (createsHistogram[String(creates)] ?? 0) + 1;
      const f = ledgerFacts.get(rel);
      if (!f) {
        problems.push(`${rel}: not in the ledger`);
        continue;
      }
      if (f.expired > 0) recreatedAfterVanish++;
      // No create the ledger does not know of: every task the service made is a submission
      // the ledger recorded, as accepted or as ambiguous.
      if (creates > f.accepted + f.ambiguous)
        problems.push(`${rel}: ${creates} creates, the ledger knows ${f.accepted} accepted + ${f.ambiguous} ambiguous`);
      // More than one create only where the ledger held the photo as ambiguous, or recorded
      // a vanished task created again.
      if (creates > 1 && f.ambiguous === 0 && f.expired === 0)
        problems.push(`${rel}: ${creates} creates without an ambiguous create or a vanished task on record`);
      if (creates === 0) problems.push(`${rel}: never created, yet done?`);
    }
    const extra = [...crashOut.byStem.keys()].filter((stem) => !rels.some((r) => r.replace(/\.[^./]+$/, '') === stem));
    for (const e of extra) mismatches.push(`unexpected output ${e}`);
    const limits = opts.limits ?? SPEC_LIMITS;
    const k = audit.keys[fingerprintKey(KEY)]!;
    const logFile = path.join(dir, 'state', 'darkroom.log');
    const probes = existsSync(logFile)
      ? readFileSync(logFile, 'utf8')
          .split('\n')
          .filter((l) => l.includes('"msg":"probe: ')).length
      : 0;
    const slotRefusals = k.rejectedByScope.api_key_active_tasks ?? 0;
    const windows: WindowReport = {
      limits,
      calls: k.calls,
      maxCallsInAnyMinute: k.maxCallsInAnyMinute,
      maxCallsInAnyHour: k.maxCallsInAnyHour,
      maxActiveTasks: k.maxActiveTasks,
      rejectedByScope: { ...k.rejectedByScope },
      probes,
      violations:
        Math.max(0, k.maxCallsInAnyMinute - limits.callsPerMinute) +
        Math.max(0, k.maxCallsInAnyHour - limits.callsPerHour) +
        Math.max(0, k.maxActiveTasks - limits.activeTasks) +
        (k.rejected429 - slotRefusals) +
        Math.max(0, slotRefusals - probes),
    };
    return {
      photos: rels.length,
      runs,
      kills,
      killsByPhase,
      createsPerPhoto: createsHistogram,
      held: [...held].map(([p, reason]) => ({ path: p, reason })),
      recreatedAfterVanish,
      retries,
      accountStops,
      faults: audit.faults,
      integrity,
      tempFilesLeft: crashOut.temps.length,
      orphans: await orphanExifTools(),
      mismatches,
      problems,
      cleanMs,
      crashMs,
      windows,
    };
  } finally {
    await exif.end();
    await Promise.all(sims.map((s) => s.close()));
    rmSync(root, { recursive: true, force: true });
  }
}

/** The report as the lines `npm run test:crash` prints. */
export function formatCrashReport(r: CrashReport): string {
  const hist = Object.entries(r.createsPerPhoto)
    .sort(([a], [b]) => Number(a) - Number(b))
    .map(([n, photos]) => `${photos} photo(s) × ${n}`)
    .join(', ');
  const phases = Object.entries(r.killsByPhase)
    .map(([p, n]) => `${p} ${n}`)
    .join(', ');
  const lines = [
    `kills            ${r.kills} (${phases}) over ${r.runs} runs`,
    `photos           ${r.photos}, every one with exactly one output, whole, the clean run's pixels and metadata: ${r.mismatches.length === 0 ? 'yes' : `NO (${r.mismatches.length})`}`,
    `creates/photo    ${hist}`,
    `held items       ${r.held.length} (create outcome unknown; listed by status with reason, re-queued by retry --held ${r.retries} time(s))`,
    ...r.held.slice(0, 20).map((h) => `                   ${h.path}: ${h.reason}`),
    ...(r.held.length > 20 ? [`                   … and ${r.held.length - 20} more`] : []),
    `vanished tasks   ${r.recreatedAfterVanish} photo(s) created again once, as recorded`,
    `account stops    ${r.accountStops} (injected 24403), each run again`,
    `faults injected  ${Object.entries(r.faults)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}`,
    `temp files left  ${r.tempFilesLeft}`,
    `orphans          ${r.orphans} ExifTool process(es) left behind by killed runs`,
    `key limits       ${r.windows.calls} calls; at most ${r.windows.maxCallsInAnyMinute} in any minute (limit ${r.windows.limits.callsPerMinute}), ${r.windows.maxCallsInAnyHour} in any hour (limit ${r.windows.limits.callsPerHour}), ${r.windows.maxActiveTasks} tasks at once (limit ${r.windows.limits.activeTasks}); simulator's own 429s ${JSON.stringify(r.windows.rejectedByScope)} with ${r.windows.probes} probe(s): ${r.windows.violations} violation(s)`,
    `integrity_check  ${r.integrity}`,
    `time             clean run ${(r.cleanMs / 1000).toFixed(1)} s, crash run ${(r.crashMs / 1000).toFixed(1)} s`,
  ];
  for (const m of r.mismatches) lines.push(`MISMATCH ${m}`);
  for (const p of r.problems) lines.push(`PROBLEM ${p}`);
  return lines.join('\n');
}
