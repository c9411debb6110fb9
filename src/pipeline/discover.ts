import { readFileSync } from 'node:fs';
import path from 'node:path';
import fg from 'fast-glob';
import { clock } from '../clock.js';
import type { Config } from '../config/index.js';
import type { Discovered, Ledger, ReconcileReport } from '../ledger/index.js';
import type { Logger } from '../log.js';
import { copyAtomically, writeBufferAtomically } from './atomic.js';
import { hashFile, nameIdentity, urlIdentity } from './identity.js';
import { assignOutputNames, namingOptions, writeOutputsOfDone } from './naming.js';
import { inspectSource, readHead, sha256, type Inspection, type SourceType } from './transcode.js';
import { readUrlList, type UrlEntry } from './urls.js';
import { loopSafeFs } from './walk.js';

export interface Found extends Discovered {
  /** Why the file is refused before any call is spent, or null when it looks fine. */
  readonly skipReason: string | null;
  readonly mtimeMs: number | null;
  /** Its identity: the SHA-256 of its bytes (see identity.ts). */
  readonly contentHash: string;
  readonly type: SourceType | null;
  /** Why it will be converted before upload, or null when it goes as it is. */
  readonly transcode: string | null;
}

export interface DiscoverOptions {
  /** A hash already known for this name, size and mtime: the file is not read again. */
  readonly cachedHash?: (name: string, sizeBytes: number, mtimeMs: number | null) => string | undefined;
}

/** Large files read at once: hashing is disk-bound, and a few in flight keep a disk busy. */
const PARALLEL = 4;
/**
 * Files up to this size are read whole, synchronously, and hashed and inspected from that
 * one buffer. An async read of a small file is four trips through libuv's thread pool
 * (open, fstat, read, close), and a read stream allocates its 1 MiB buffer per file: for
 * 10,000 files of 100 bytes the stream hash took 17.6 s here, readFileSync and one hash
 * 0.1 s (100,000 files: discovery 181 s before, see bench/ledger.ts). Larger files
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
 * Find the files (fast-glob include/exclude under input.dir), look at each one's headers
 * (type, transcoding, size: transcode.ts) so a file the service would refuse never costs
 * a call, and identify each by its content.
 */
export async function discover(config: Config, opts: DiscoverOptions = {}): Promise<Found[]> {
  const dir = config.input.dir;
  if (dir === null) return [];
  const ignore = [...config.input.exclude];
  const outRel = path.relative(dir, config.output.dir);
  // An output folder inside the input folder must not be read back as input.
  if (outRel === '') throw new Error('output.dir must not be the same folder as input.dir');
  // Escaped: a folder named like `restored [2024]` is a name, not a pattern.
  if (!outRel.startsWith('..') && !path.isAbsolute(outRel)) ignore.push(`${fg.escapePath(outRel.split(path.sep).join('/'))}/**`);
  const entries = await clock.io(
    fg(config.input.include as string[], {
      cwd: dir,
      ignore,
      onlyFiles: true,
      dot: false,
      stats: true,
      followSymbolicLinks: true,
      // Symlink loops end (walk.ts); fast-glob alone walks them until the path length limit.
      fs: loopSafeFs(),
      suppressErrors: true,
      unique: true,
    }),
  );
  entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const topts = { transcode: config.input.transcode, maxPixels: config.input.maxPixels, maxUploadBytes: config.limits.maxUploadBytes };
  const out: Found[] = new Array(entries.length);
  const look = async (i: number): Promise<void> => {
    const e = entries[i]!;
    const srcPath = path.join(dir, e.path);
    const size = e.stats?.size ?? 0;
    const mtimeMs = e.stats ? Math.floor(e.stats.mtimeMs) : null;
    let contentHash: string;
    let inspection: Inspection;
    if (size === 0) {
      inspection = await inspectSource(srcPath, size, topts);
      contentHash = nameIdentity('empty', e.path);
    } else {
      const cached = opts.cachedHash?.(e.path, size, mtimeMs);
      let bytes: Buffer | undefined;
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
        inspection = { ...inspection, skipReason: inspection.skipReason ?? `cannot read (${(err as NodeJS.ErrnoException).code ?? String(err)})` };
      }
    }
    out[i] = { relPath: e.path, srcPath, sizeBytes: size, mtimeMs, skipReason: inspection.skipReason, contentHash, type: inspection.type, transcode: inspection.transcode };
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
      await clock.io(new Promise<void>((resolve) => setImmediate(resolve)));
    }
  }
  let next = 0;
  const worker = async () => {
    for (let k = next++; k < large.length; k = next++) await look(large[k]!);
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL, large.length) }, worker));
  return out;
}

export interface DiscoverySummary {
  readonly found: Found[];
  readonly urls: UrlEntry[];
  /** As Items.addDiscovered reports it: photos new to the ledger (or changed), and the rest. */
  readonly added: { readonly added: number; readonly known: number };
  readonly identity: ReconcileReport;
  /** Outputs copied for new names of photos already done; names left without one. */
  readonly copied: number;
  readonly missing: readonly string[];
}

export interface DiscoverIntoOptions {
  /** Fingerprints of the run's keys: URL inputs go to a lane at once (they skip the upload). */
  readonly keyFps: readonly string[];
  readonly log: Logger;
  /** A look at the files between finding and recording them (the runner's same-file check). */
  readonly adjust?: (found: Found[]) => Found[];
}

/**
 * A run's discovery: files and URL list read, reconciled with the ledger by content
 * (ledger/identity.ts), output names given (naming.ts), and new names of photos already
 * done given their outputs. Everything before the first call; a bad URL line is a
 * ConfigError (exit 2).
 */
export async function discoverInto(config: Config, ledger: Ledger, opts: DiscoverIntoOptions): Promise<DiscoverySummary> {
  const urls = config.input.urls === null ? [] : readUrlList(config.input.urls);
  const seen = await discover(config, { cachedHash: (n, s, m) => ledger.identity.cachedHash(n, s, m) });
  const found = opts.adjust ? opts.adjust(seen) : seen;
  const identity = ledger.identity.reconcile(
    found.map((f) => ({ name: f.relPath, src: f.srcPath, sizeBytes: f.sizeBytes, mtimeMs: f.mtimeMs, contentHash: f.contentHash, skipReason: f.skipReason })),
    urls.map((u) => ({ url: u.url, name: u.name, contentHash: urlIdentity(u.url) })),
    { keyFps: opts.keyFps },
  );
  const naming = namingOptions(config);
  assignOutputNames(ledger, naming);
  ledger.setMeta('pipeline', JSON.stringify(config.steps.map((s) => s.capability)));
  const { copied, missing } = await writeOutputsOfDone(ledger, {
    outputDir: config.output.dir,
    naming,
    write: (target, bytes) => writeBufferAtomically(target, bytes, config.output.dir),
    copy: (target, from) => copyAtomically(from.path, target, from.bytes, config.output.dir),
    log: opts.log,
  });
  opts.log.info(
    { files: found.length, urls: urls.length, ...identity, transcode: found.filter((f) => f.transcode).length, copied, missing: missing.length },
    'inputs found',
  );
  const fresh = identity.added + identity.changed;
  return { found, urls, added: { added: fresh, known: Math.max(0, identity.distinct - fresh) }, identity, copied, missing };
}
