import { readFileSync, statSync, type Stats } from 'node:fs';
import path from 'node:path';
import fg from 'fast-glob';
import { clock } from '../clock.js';
import type { Config } from '../config/index.js';
import type { Ledger, ReconcileReport } from '../ledger/index.js';
import type { Logger } from '../log.js';
import { DECODE_PARALLEL, DecodeQueue } from './decode.js';
import { headerFacts } from './headers.js';
import { hiddenLine, hiddenMatcher } from './hidden.js';
import { hashFile, isContentHash, nameIdentity, urlIdentity } from './identity.js';
import { readHead, sha256 } from './read.js';
import { inspectSource, type Inspection, type SourceType } from './transcode.js';
import { readUrlList, type UrlEntry } from './urls.js';
import { loopSafeFs } from './walk.js';

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

/**
 * The files under input.dir that the job's include and exclude patterns name, sorted by
 * path, each statted (or with the reason it cannot be); hidden ones counted, and left out
 * unless input.hidden.
 */
async function listInputs(config: Config, dir: string) {
  const ignore = [...config.input.exclude];
  const outRel = path.relative(dir, config.output.dir);
  // An output folder inside the input folder must not be read back as input.
  if (outRel === '') throw new Error('output.dir must not be the same folder as input.dir');
  // Escaped: a folder named like `restored [2024]` is a name, not a pattern.
  if (!outRel.startsWith('..') && !path.isAbsolute(outRel)) ignore.push(`${fg.escapePath(outRel.split(path.sep).join('/'))}/**`);
  // One walk with dot files, split here: what `dot: false` would leave out is counted, not
  // silently dropped, at the cost of listing hidden folders (readdir only: none is read or hashed).
  // Names only: fast-glob's `stats: true` returns nothing at all, silently, when one entry
  // cannot be statted (a name that is not UTF-8, which Node cannot open by its decoded name).
  // Each is statted here instead, and one that cannot be is skipped with its reason.
  const listed = await clock.io(
    fg(config.input.include as string[], {
      cwd: dir,
      ignore,
      onlyFiles: true,
      dot: true,
      followSymbolicLinks: true,
      // Symlink loops end (walk.ts); fast-glob alone walks them until the path length limit.
      fs: loopSafeFs(),
      suppressErrors: true,
      unique: true,
    }),
  );
  const walked = listed.map((p) => ({ path: p, ...statOf(path.join(dir, p)) }));
  const isHidden = hiddenMatcher(config.input.include);
  const entries = config.input.hidden ? walked : walked.filter((e) => !isHidden(e.path));
  const hidden = walked.length - entries.length;
  entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { entries, hidden };
}

/** discoverFiles' files alone. */
export async function discover(config: Config, opts: DiscoverOptions = {}): Promise<Found[]> {
  return (await discoverFiles(config, opts)).found;
}

/** A file to look at: its path under input.dir and its stat (or why it cannot be read). */
type Listed = { path: string } & ReturnType<typeof statOf>;

/** Files under input.dir, by their paths ('/'-separated), statted now: what a followed folder's new files are looked at as. */
function statInputs(dir: string, relPaths: readonly string[]): Listed[] {
  return relPaths.map((p) => ({ path: p, ...statOf(path.join(dir, p)) }));
}

/**
 * Find the files (fast-glob include/exclude under input.dir), look at each one's headers
 * (type, transcoding, size, pixels: transcode.ts) and decode each new content in full
 * (decode.ts), so a file the service would refuse, or that is not whole, never costs a
 * call; and identify each by its content. Hidden files (a name on the path starting with a
 * dot) are counted, and left out unless input.hidden. `defer`: files left for later (a
 * followed folder's files still being written), neither looked at nor returned.
 */
export async function discoverFiles(
  config: Config,
  opts: DiscoverOptions & { readonly defer?: (relPath: string, stats: Stats) => boolean } = {},
): Promise<DiscoveredFiles> {
  const dir = config.input.dir;
  if (dir === null) return { found: [], hidden: 0, decodes: { decoded: 0, refused: 0, known: 0, ms: 0 } };
  const { entries, hidden } = await listInputs(config, dir);
  const defer = opts.defer;
  const kept = defer ? entries.filter((e) => e.stats === undefined || !defer(e.path, e.stats)) : entries;
  return { ...(await lookAt(config, dir, kept, opts)), hidden };
}

/**
 * Each listed file looked at: headers, content hash, and a full decode of each content not
 * checked before (discoverFiles).
 */
async function lookAt(
  config: Config,
  dir: string,
  entries: readonly Listed[],
  opts: DiscoverOptions = {},
): Promise<Omit<DiscoveredFiles, 'hidden'>> {
  const decodes = { decoded: 0, refused: 0, known: 0, ms: 0 };
  const topts = {
    transcode: config.input.transcode,
    maxPixels: config.input.maxPixels,
    maxUploadBytes: config.limits.maxUploadBytes,
    maxInputPixels: config.limits.maxInputPixels,
  };
  const decoding = new DecodeQueue(config.limits.maxInputPixels, opts.decodeVerdict);
  const started = clock.now();
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
  for (let i = 0; i < entries.length; i++) {
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
    for (let k = next++; k < large.length; k = next++) await look(large[k]!);
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL, large.length) }, worker));
  for (const [i, r] of await decoding.finish()) {
    out[i] = { ...out[i]!, skipReason: r.reason, decoded: r.decodedNow ? { reason: r.reason } : null };
  }
  Object.assign(decodes, decoding.counts);
  decodes.ms = clock.now() - started;
  return { found: out, decodes };
}

export interface DiscoverySummary {
  readonly found: Found[];
  readonly urls: UrlEntry[];
  /** Photos new to the ledger (or changed) by this discovery, and the rest it found. */
  readonly added: { readonly added: number; readonly known: number };
  readonly identity: ReconcileReport;
  /** Files left out for a name starting with a dot (input.hidden: false). */
  readonly hidden: number;
  /** Full decodes of new content (see DiscoveredFiles). */
  readonly decodes: DiscoveredFiles['decodes'];
}

export interface DiscoverIntoOptions {
  /** Fingerprints of the run's keys: URL inputs go to a lane at once (they skip the upload). */
  readonly keyFps: readonly string[];
  /** A look at the files between finding and recording them (the runner's same-file check). */
  readonly adjust?: (found: Found[]) => Found[];
  /** Files left for later (a followed folder's files still being written: run/follow.ts). */
  readonly defer?: (relPath: string, stats: Stats) => boolean;
}

/**
 * A run's discovery: files and URL list read, and reconciled with the ledger by content
 * (ledger/discovery.ts). It finds and records; the outputs' names and files are the output
 * writer's (outputs/writer.ts). Everything before the first call; a bad URL line is a
 * ConfigError (exit 2).
 */
export async function discoverInto(config: Config, ledger: Ledger, opts: DiscoverIntoOptions): Promise<DiscoverySummary> {
  const urls = config.input.urls === null ? [] : readUrlList(config.input.urls);
  const seen = await discoverFiles(config, { ...ledgerMemory(ledger), ...(opts.defer ? { defer: opts.defer } : {}) });
  return { ...record(ledger, seen, urls, opts, false), hidden: seen.hidden };
}

/**
 * Files of input.dir named by a followed folder's watcher (run/follow.ts), looked at as a
 * discovery looks at them; recorded by `recordNamed`.
 */
export async function lookAtNamed(config: Config, ledger: Ledger, relPaths: readonly string[]): Promise<Omit<DiscoveredFiles, 'hidden'>> {
  const dir = config.input.dir;
  if (dir === null) return { found: [], decodes: { decoded: 0, refused: 0, known: 0, ms: 0 } };
  return lookAt(config, dir, statInputs(dir, relPaths), ledgerMemory(ledger));
}

/**
 * What a followed folder brought (files looked at by lookAtNamed, the URL list when it
 * changed) recorded like a discovery's, except that no name absent from them is marked
 * gone: they are what is new, not all there is.
 */
export function recordNamed(
  ledger: Ledger,
  seen: Omit<DiscoveredFiles, 'hidden'>,
  urls: readonly UrlEntry[],
  opts: DiscoverIntoOptions,
): Omit<DiscoverySummary, 'hidden'> {
  return record(ledger, seen, urls, opts, true);
}

/** What the ledger already knows of a file: its hash by name, size and mtime; its content's decode. */
function ledgerMemory(ledger: Ledger): DiscoverOptions {
  return { cachedHash: (n, s, m) => ledger.inputs.cachedHash(n, s, m), decodeVerdict: (h) => ledger.checks.verdict(h) };
}

/** The decodes made kept by content, then the names reconciled with the ledger (ledger/discovery.ts). */
function record(
  ledger: Ledger,
  seen: Omit<DiscoveredFiles, 'hidden'>,
  urls: readonly UrlEntry[],
  opts: DiscoverIntoOptions,
  addOnly: boolean,
): Omit<DiscoverySummary, 'hidden'> {
  ledger.checks.record(seen.found.flatMap((f) => (f.decoded ? [{ contentHash: f.contentHash, reason: f.decoded.reason }] : [])));
  const found = opts.adjust ? opts.adjust(seen.found) : seen.found;
  const identity = ledger.discovery.reconcile(
    found.map((f) => ({
      name: f.relPath,
      src: f.srcPath,
      sizeBytes: f.sizeBytes,
      mtimeMs: f.mtimeMs,
      contentHash: f.contentHash,
      skipReason: f.skipReason,
    })),
    urls.map((u) => ({ url: u.url, name: u.name, contentHash: urlIdentity(u.url) })),
    { keyFps: opts.keyFps, addOnly },
  );
  const fresh = identity.added + identity.changed;
  return {
    found,
    urls: [...urls],
    added: { added: fresh, known: Math.max(0, identity.distinct - fresh) },
    identity,
    decodes: seen.decodes,
  };
}

/** What a run's discovery found, in its log: with what the output writer then did of it (`outputs`). */
export function logDiscovery(
  log: Logger,
  d: DiscoverySummary,
  outputs: { readonly copied: number; readonly missing: readonly string[]; readonly unwritable: number },
): void {
  const { found, urls, identity, decodes, hidden } = d;
  log.info(
    {
      files: found.length,
      urls: urls.length,
      ...identity,
      transcode: found.filter((f) => f.transcode).length,
      copied: outputs.copied,
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
