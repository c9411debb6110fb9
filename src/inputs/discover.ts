import { readFileSync, statSync, type Stats } from 'node:fs';
import path from 'node:path';
import fg from 'fast-glob';
import { clock } from '../clock.js';
import type { Config } from '../config/index.js';
import type { BatchReport, DiscoveryPass, Ledger, ReconcileReport } from '../ledger/index.js';
import type { Logger } from '../log.js';
import { DECODE_PARALLEL, DecodeQueue } from './decode.js';
import { headerFacts } from './headers.js';
import { hiddenLine, hiddenMatcher } from './hidden.js';
import { hashFile, isContentHash, nameIdentity, urlIdentity } from './identity.js';
import { readHead, sha256 } from './read.js';
import { inspectSource, type Inspection, type SourceType } from './transcode.js';
import { readUrlList, type UrlEntry } from './urls.js';
import { loopSafeFs, WalkGate } from './walk.js';

/** A file discovery found under input.dir: its name, its identity and whether it is refused. */
export interface Found {
  /** Path under input.dir, with '/'. */
  readonly relPath: string;
  readonly srcPath: string;
  readonly sizeBytes: number;
  /** Why the file is refused before any call is spent (not an image, empty, too large), or null when it looks fine. */
  readonly skipReason: string | null;
  readonly mtimeMs: number | null;
  /** Its identity: the SHA-256 of its bytes (see identity.ts). */
  readonly contentHash: string;
  readonly type: SourceType | null;
  /** Why it will be converted before upload, or null when it goes as it is. */
  readonly transcode: string | null;
  /** Set when this discovery decoded the file in full: what it found (null: whole), to be kept by content. */
  readonly decoded: { readonly reason: string | null } | null;
}

export interface DiscoverOptions {
  /** A hash already known for this name, size and mtime: the file is not read again. */
  readonly cachedHash?: (name: string, sizeBytes: number, mtimeMs: number | null) => string | undefined;
  /**
   * What an earlier full decode of this content found (null: whole, else why it is
   * refused), or undefined when it was never decoded: only those are decoded now.
   */
  readonly decodeVerdict?: (contentHash: string) => string | null | undefined;
  /** Files left for later (`run --follow`: still being written), neither looked at nor returned. */
  readonly defer?: (relPath: string, stats: Stats) => boolean;
  /** Asked before each file: true ends the discovery where it is (its batch is not handed on). */
  readonly stopped?: () => boolean;
}

export interface DiscoveredFiles {
  readonly found: Found[];
  /** Files left out because a name on their path starts with a dot (input.hidden: false). */
  readonly hidden: number;
  /** Full decodes made now; of them, the refused; and contents whose verdict was already known. */
  readonly decodes: { readonly decoded: number; readonly refused: number; readonly known: number; readonly ms: number };
}

/** A found file's size and times, or why it cannot be read (its name not UTF-8, gone since it was listed). */
function statOf(file: string): { stats: Stats; unreadable?: undefined } | { stats?: undefined; unreadable: string } {
  try {
    return { stats: statSync(file) };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? String(err);
    if (code === 'ENOENT' && path.basename(file).includes('\ufffd')) {
      return { unreadable: 'its name is not valid UTF-8, so it cannot be opened by name (shown here with \ufffd); rename the file' };
    }
    return { unreadable: `cannot read (${code})` };
  }
}

/** Large files read at once: hashing is disk-bound, and a few in flight keep a disk busy. */
const PARALLEL = 4;
/**
 * Files up to this size are read whole, synchronously, and hashed and inspected from that
 * one buffer. An async read of a small file is four trips through libuv's thread pool
 * (open, fstat, read, close), and a read stream allocates its 1 MiB buffer per file: for
 * 10,000 files of 100 bytes the stream hash takes 17.6 s here, readFileSync and one hash
 * 0.1 s (bench/ledger.ts measures the discovery of 100,000 files). Larger files
 * (scans) stay async and streamed, a few at once.
 */
const READ_WHOLE = 1 << 20;
/** Enough of a large file for its headers (a JPEG's EXIF with thumbnail and ICC profile); else sharp reads them. */
const HEAD_BYTES = 128 * 1024;
/**
 * The event loop (signals, progress) gets a turn after this many small files or bytes read
 * synchronously, whichever comes first: a few milliseconds from the page cache, a fraction
 * of a second from a slow disk.
 */
const YIELD_FILES = 256;
const YIELD_BYTES = 16 << 20;

/** Names listed by the walk and not yet looked at, at most (walk.ts WalkGate): the walk's memory, whatever the archive's size. */
const WALK_AHEAD = 4096;

/**
 * The files under input.dir that the job's include and exclude patterns name, in the walk's
 * order (a folder at a time, each folder's entries by name: the same order on every run), a
 * batch at a time; hidden ones counted in `counts`, and left out unless input.hidden. The walk
 * reads ahead of the batches only so far (WALK_AHEAD).
 */
async function* listInputs(config: Config, dir: string, counts: DiscoveryCounts): AsyncGenerator<string[]> {
  const ignore = [...config.input.exclude];
  const outRel = path.relative(dir, config.output.dir);
  // An output folder inside the input folder must not be read back as input.
  if (outRel === '') throw new Error('output.dir must not be the same folder as input.dir');
  // Escaped: a folder named like `restored [2024]` is a name, not a pattern.
  if (!outRel.startsWith('..') && !path.isAbsolute(outRel)) ignore.push(`${fg.escapePath(outRel.split(path.sep).join('/'))}/**`);
  const patterns = config.input.include as string[];
  const gate = new WalkGate(WALK_AHEAD);
  // One walk with dot files, split here: what `dot: false` would leave out is counted, not
  // silently dropped, at the cost of listing hidden folders (readdir only: none is read or hashed).
  // Names only: fast-glob's `stats: true` returns nothing at all, silently, when one entry
  // cannot be statted (a name that is not UTF-8, which Node cannot open by its decoded name).
  // Each is statted when its batch is looked at instead, and one that cannot be is skipped with its reason.
  const options = {
    cwd: dir,
    ignore,
    onlyFiles: true,
    dot: true,
    followSymbolicLinks: true,
    // Symlink loops end, each folder is read in name order and only while the batches keep up (walk.ts).
    fs: loopSafeFs(gate),
    // One folder at a time: the walk's order is the same on every run.
    concurrency: 1,
    suppressErrors: true,
  };
  // A name twice only from patterns with different bases; fast-glob's `unique` keeps every name
  // it has seen in memory, so it is asked for only then.
  const unique = fg.generateTasks(patterns, options).length > 1;
  const stream = fg.stream(patterns, { ...options, unique });
  const isHidden = hiddenMatcher(config.input.include);
  const it = stream[Symbol.asyncIterator]() as AsyncIterator<string | Buffer>;
  let names: string[] = [];
  let size = FIRST_BATCH_FILES;
  try {
    for (;;) {
      gate.reading(true);
      const next = await clock.io(it.next());
      if (next.done) break;
      gate.reading(false);
      const name = String(next.value);
      if (!config.input.hidden && isHidden(name)) {
        counts.hidden++;
        continue;
      }
      names.push(name);
      if (names.length >= size) {
        yield names;
        names = [];
        size = Math.min(BATCH_FILES, size * 2);
      }
    }
    if (names.length > 0) yield names;
  } finally {
    (stream as unknown as { destroy(): void }).destroy();
  }
}

/** discoverFiles' files alone. */
export async function discover(config: Config, opts: DiscoverOptions = {}): Promise<Found[]> {
  return (await discoverFiles(config, opts)).found;
}

/**
 * Every file at once, sorted by path (`plan` reads everything first): discoverBatches' batches put together.
 */
export async function discoverFiles(config: Config, opts: DiscoverOptions = {}): Promise<DiscoveredFiles> {
  const counts = newCounts();
  const found: Found[] = [];
  for await (const batch of discoverBatches(config, opts, counts)) found.push(...batch);
  found.sort((a, b) => (a.relPath < b.relPath ? -1 : a.relPath > b.relPath ? 1 : 0));
  return { found, hidden: counts.hidden, decodes: counts.decodes };
}

/** What a discovery has counted so far; its batches add to it as they come. */
export interface DiscoveryCounts {
  /** Files found and looked at. */
  files: number;
  /** Of them, refused before any call (skipReason). */
  skipped: number;
  /** Of them, to be converted before upload. */
  transcode: number;
  /** Files left out for a name starting with a dot (input.hidden: false). */
  hidden: number;
  /** Full decodes made now; of them, the refused; and contents whose verdict was already known. */
  readonly decodes: { decoded: number; refused: number; known: number; ms: number };
}

export function newCounts(): DiscoveryCounts {
  return { files: 0, skipped: 0, transcode: 0, hidden: 0, decodes: { decoded: 0, refused: 0, known: 0, ms: 0 } };
}

/**
 * Files looked at, hashed and decoded a batch at a time: what one batch of the ledger's records
 * holds. The first batches are small, so the first photos reach the lanes within a fraction of
 * a second however large the folder; they double up to BATCH_FILES, one commit (an fsync) each.
 */
const FIRST_BATCH_FILES = 16;
const BATCH_FILES = 1024;

/**
 * Find the files (fast-glob include/exclude under input.dir), look at each one's headers
 * (type, transcoding, size, pixels: transcode.ts) and decode each new content in full
 * (decode.ts), so a file the service would refuse, or that is not whole, never costs a
 * call; and identify each by its content. Hidden files (a name on the path starting with a
 * dot) are counted, and left out unless input.hidden. Yields the files a batch at a time,
 * in the walk's order, each batch whole (its decodes done), and adds to `counts` as it goes.
 */
export async function* discoverBatches(config: Config, opts: DiscoverOptions, counts: DiscoveryCounts): AsyncGenerator<Found[]> {
  const dir = config.input.dir;
  if (dir === null) return;
  for await (const names of listInputs(config, dir, counts)) {
    const started = clock.now();
    const batch = await lookAt(config, dir, names, opts, counts);
    if (opts.stopped?.()) return;
    counts.decodes.ms += clock.now() - started;
    counts.files += batch.length;
    for (const f of batch) {
      if (f.skipReason !== null) counts.skipped++;
      if (f.transcode !== null) counts.transcode++;
    }
    yield batch;
  }
}

/** One batch of names under `dir`: each statted, read, hashed, inspected, and its new content decoded. */
async function lookAt(
  config: Config,
  dir: string,
  names: readonly string[],
  opts: DiscoverOptions,
  counts: DiscoveryCounts,
): Promise<Found[]> {
  const statted = names.map((p) => ({ path: p, ...statOf(path.join(dir, p)) }));
  const defer = opts.defer;
  const entries = defer ? statted.filter((e) => e.stats === undefined || !defer(e.path, e.stats)) : statted;
  const topts = {
    transcode: config.input.transcode,
    maxPixels: config.input.maxPixels,
    maxUploadBytes: config.limits.maxUploadBytes,
    maxInputPixels: config.limits.maxInputPixels,
  };
  const decoding = new DecodeQueue(config.limits.maxInputPixels, opts.decodeVerdict);
  const out: Found[] = new Array(entries.length);
  const look = async (i: number): Promise<void> => {
    const e = entries[i]!;
    const srcPath = path.join(dir, e.path);
    if (e.stats === undefined) {
      out[i] = {
        relPath: e.path,
        srcPath,
        sizeBytes: 0,
        mtimeMs: null,
        skipReason: e.unreadable,
        contentHash: nameIdentity('unreadable', e.path),
        type: null,
        transcode: null,
        decoded: null,
      };
      return;
    }
    const size = e.stats.size;
    const mtimeMs = Math.floor(e.stats.mtimeMs);
    let contentHash: string;
    let inspection: Inspection;
    let bytes: Buffer | undefined;
    if (size === 0) {
      inspection = await inspectSource(srcPath, size, topts);
      contentHash = nameIdentity('empty', e.path);
    } else {
      const cached = opts.cachedHash?.(e.path, size, mtimeMs);
      let readError: unknown = null;
      try {
        bytes = size <= READ_WHOLE ? readFileSync(srcPath) : await clock.io(readHead(srcPath, HEAD_BYTES));
      } catch (err) {
        readError = err;
      }
      // An unreadable file: inspectSource tries it and gives the reason.
      inspection = await inspectSource(srcPath, size, topts, bytes);
      try {
        if (readError !== null) throw readError;
        contentHash = cached ?? (size <= READ_WHOLE ? sha256(bytes!) : await hashFile(srcPath));
      } catch (err) {
        contentHash = nameIdentity('unreadable', e.path);
        inspection = {
          ...inspection,
          skipReason: inspection.skipReason ?? `cannot read (${(err as NodeJS.ErrnoException).code ?? String(err)})`,
        };
      }
    }
    out[i] = {
      relPath: e.path,
      srcPath,
      sizeBytes: size,
      mtimeMs,
      skipReason: inspection.skipReason,
      contentHash,
      type: inspection.type,
      transcode: inspection.transcode,
      decoded: null,
    };
    const type = inspection.type;
    if (inspection.skipReason !== null || type === null || !isContentHash(contentHash)) return;
    // Small files from the bytes in hand; large ones read by sharp from the file, a few lines at a time.
    const input = size <= READ_WHOLE && bytes !== undefined ? bytes : srcPath;
    // Its size, for how to decode it (decode.ts): from the header in hand (µs), else unknown (decoded through a shrink).
    const facts = bytes !== undefined ? headerFacts(bytes) : null;
    await decoding.add(i, contentHash, input, type, facts ? facts.width * facts.height : null);
  };
  // Small files one after another, each read in a few microseconds; large ones PARALLEL at once.
  const large: number[] = [];
  let files = 0;
  let bytes = 0;
  for (let i = 0; i < entries.length && !opts.stopped?.(); i++) {
    const size = entries[i]!.stats?.size ?? 0;
    if (size > READ_WHOLE) {
      large.push(i);
      continue;
    }
    await look(i);
    bytes += size;
    if (++files >= YIELD_FILES || bytes >= YIELD_BYTES) {
      files = bytes = 0;
      await clock.yieldTurn();
    }
  }
  let next = 0;
  const worker = async () => {
    for (let k = next++; k < large.length && !opts.stopped?.(); k = next++) await look(large[k]!);
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL, large.length) }, worker));
  for (const [i, r] of await decoding.finish()) {
    out[i] = { ...out[i]!, skipReason: r.reason, decoded: r.decodedNow ? { reason: r.reason } : null };
  }
  for (const k of ['decoded', 'refused', 'known'] as const) counts.decodes[k] += decoding.counts[k];
  return out;
}

export interface DiscoverySummary {
  /** Files found, skipped, to transcode, hidden, and the decodes made. */
  readonly counts: DiscoveryCounts;
  /** URL lines read. */
  readonly urls: number;
  /** Photos new to the ledger (or changed) by this discovery, and the rest it found. */
  readonly added: { readonly added: number; readonly known: number };
  readonly identity: ReconcileReport;
  /** False when `stopped` ended it half way: what it had recorded, nothing marked gone. */
  readonly complete: boolean;
}

export interface DiscoverIntoOptions {
  /** Fingerprints of the run's keys: URL inputs go to a lane at once (they skip the upload). */
  readonly keyFps: readonly string[];
  /**
   * A look at each batch's files between finding and recording them (the runner's same-file
   * check); `seen` says whether this discovery recorded a name in an earlier batch.
   */
  readonly adjust?: (found: Found[], seen: (relPath: string) => boolean) => Found[];
  /** The URL list, when the caller read it already (a bad line is the caller's ConfigError then). */
  readonly urls?: readonly UrlEntry[];
  /** What has been counted so far, for whoever shows it while the discovery goes on. */
  readonly counts?: DiscoveryCounts;
  /** After each batch is recorded, before the next is looked at. */
  readonly onBatch?: (batch: BatchReport, pass: DiscoveryPass) => void;
  /** Asked between batches: true ends the discovery where it is, incomplete (no photo is marked gone). */
  readonly stopped?: () => boolean;
  /** Files left for later (`run --follow`: a file changed within input.settle may still be being written). */
  readonly defer?: DiscoverOptions['defer'];
}

/**
 * A run's discovery: files and URL list read, and reconciled with the ledger by content
 * (ledger/discovery.ts), a batch at a time: each batch's photos are recorded (and so the
 * lanes') as soon as it is read, hashed and decoded, files in path order, then the URL lines.
 * It finds and records; the outputs' names and files are the output writer's
 * (outputs/writer.ts). A bad URL line is a ConfigError (exit 2).
 */
export async function discoverInto(config: Config, ledger: Ledger, opts: DiscoverIntoOptions): Promise<DiscoverySummary> {
  const urls = opts.urls ?? (config.input.urls === null ? [] : readUrlList(config.input.urls));
  const counts = opts.counts ?? newCounts();
  const pass = ledger.discovery.begin();
  const reconcile = { keyFps: opts.keyFps };
  const look = {
    ...ledgerMemory(ledger),
    ...(opts.defer ? { defer: opts.defer } : {}),
    ...(opts.stopped ? { stopped: opts.stopped } : {}),
  };
  const summary = (identity: ReconcileReport, complete: boolean): DiscoverySummary => {
    const fresh = identity.added + identity.changed;
    return { counts, urls: urls.length, added: { added: fresh, known: Math.max(0, identity.distinct - fresh) }, identity, complete };
  };
  for await (const batch of discoverBatches(config, look, counts)) {
    if (opts.stopped?.()) return summary(pass.sofar(), false);
    const { report } = recordBatch(ledger, pass, batch, [], opts);
    opts.onBatch?.(report, pass);
  }
  if (opts.stopped?.()) return summary(pass.sofar(), false);
  if (urls.length > 0) {
    const { report } = recordBatch(ledger, pass, [], urls, opts);
    opts.onBatch?.(report, pass);
  }
  return summary(pass.end(reconcile), true);
}

/** What the ledger already knows of a file: its hash by name, size and mtime; its content's decode. */
function ledgerMemory(ledger: Ledger): DiscoverOptions {
  return { cachedHash: ledger.inputs.cachedHash.bind(ledger.inputs), decodeVerdict: ledger.checks.verdict.bind(ledger.checks) };
}

/**
 * One batch of a discovery's pass recorded: the decodes made kept by content, the files
 * looked at once more (`adjust`: the same-file check), then the names reconciled with the
 * ledger (ledger/discovery.ts). Returns the batch's report and the files as recorded.
 */
export function recordBatch(
  ledger: Ledger,
  pass: DiscoveryPass,
  batch: Found[],
  urls: readonly UrlEntry[],
  opts: Pick<DiscoverIntoOptions, 'keyFps' | 'adjust'>,
): { readonly report: BatchReport; readonly found: readonly Found[] } {
  ledger.checks.record(batch.flatMap((f) => (f.decoded ? [{ contentHash: f.contentHash, reason: f.decoded.reason }] : [])));
  const seen = (relPath: string) => ledger.inputs.seenIn(`f:${relPath}`, pass.gen);
  const found = opts.adjust ? opts.adjust(batch, seen) : batch;
  const files = found.map((f) => ({
    name: f.relPath,
    src: f.srcPath,
    sizeBytes: f.sizeBytes,
    mtimeMs: f.mtimeMs,
    contentHash: f.contentHash,
    skipReason: f.skipReason,
  }));
  const lines = urls.map((u) => ({ url: u.url, name: u.name, contentHash: urlIdentity(u.url) }));
  return { report: pass.record(files, lines, { keyFps: opts.keyFps }), found };
}

/**
 * Files of input.dir named by a followed folder's watcher (run/follow.ts), looked at as a
 * discovery looks at them (read, hashed, decoded in full); recorded by `recordBatch`.
 */
export async function lookAtNamed(config: Config, ledger: Ledger, relPaths: readonly string[]): Promise<Found[]> {
  const dir = config.input.dir;
  if (dir === null) return [];
  return lookAt(config, dir, relPaths, ledgerMemory(ledger), newCounts());
}

/** What a run's discovery found, in its log: with what the output writer then did of it (`outputs`). */
export function logDiscovery(
  log: Logger,
  d: DiscoverySummary,
  outputs: { readonly copied: number; readonly missing: readonly string[]; readonly retired: number; readonly unwritable: number },
): void {
  const { counts, urls, identity } = d;
  const { decodes, hidden } = counts;
  log.info(
    {
      files: counts.files,
      urls,
      ...identity,
      transcode: counts.transcode,
      copied: outputs.copied,
      retired: outputs.retired,
      missing: outputs.missing.length,
      hidden,
      unwritable: outputs.unwritable,
    },
    'inputs found',
  );
  // What decoding cost (measured on the shared 2-core machine: ~0.5 ms a tiny PNG, ~3 ms a 640×480 JPEG, 17–30 ms a 6-Mpx one).
  log.info(
    { ...decodes, parallel: DECODE_PARALLEL },
    `inputs decoded in full: ${decodes.decoded} new (${decodes.refused} refused), ${decodes.known} already checked, in ${decodes.ms} ms`,
  );
  const hiddenNote = hiddenLine(hidden);
  if (hiddenNote !== null) log.info({ hidden }, hiddenNote);
  if (identity.gone > 0)
    log.info(
      { gone: identity.gone },
      `${identity.gone} photo(s) gone: their files are no longer in input.dir (they come back if the files do)`,
    );
}
