import { readFileSync } from 'node:fs';
import path from 'node:path';
import fg from 'fast-glob';
import { clock } from '../clock.js';
import type { Config } from '../config/index.js';
import type { Discovered, Ledger, ReconcileReport } from '../ledger/index.js';
import type { Logger } from '../log.js';
import { writeAtomically } from './download.js';
import { hashFile, nameIdentity, urlIdentity } from './identity.js';
import { assignOutputNames, namingOptions, writeOutputsOfDone } from './naming.js';
import { inspectSource, sha256, SMALL_FILE_BYTES, type SourceType } from './transcode.js';
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

/** Files read at once: hashing is disk-bound, and a few in flight keep a disk busy. */
const PARALLEL = 4;

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
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < entries.length; i = next++) {
      const e = entries[i]!;
      const srcPath = path.join(dir, e.path);
      const size = e.stats?.size ?? 0;
      const mtimeMs = e.stats ? Math.floor(e.stats.mtimeMs) : null;
      const cached = size === 0 ? undefined : opts.cachedHash?.(e.path, size, mtimeMs);
      // A small file is read once, whole, for its headers and its hash (SMALL_FILE_BYTES);
      // if that read fails, the usual reads below say why.
      let whole: { bytes: Buffer; hash: string | null } | undefined;
      if (size > 0 && size <= SMALL_FILE_BYTES) {
        try {
          const bytes = readFileSync(srcPath);
          whole = { bytes, hash: cached === undefined ? sha256(bytes) : null };
        } catch {
          whole = undefined;
        }
      }
      const look = await inspectSource(srcPath, size, topts, whole);
      let contentHash: string;
      let skipReason = look.skipReason;
      if (size === 0) {
        contentHash = nameIdentity('empty', e.path);
      } else {
        try {
          contentHash = cached ?? whole?.hash ?? (await hashFile(srcPath));
        } catch (err) {
          contentHash = nameIdentity('unreadable', e.path);
          skipReason ??= `cannot read (${(err as NodeJS.ErrnoException).code ?? String(err)})`;
        }
      }
      out[i] = { relPath: e.path, srcPath, sizeBytes: size, mtimeMs, skipReason, contentHash, type: look.type, transcode: look.transcode };
    }
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL, entries.length) }, worker));
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
    write: (target, bytes) => writeAtomically(target, bytes, config.output.dir),
    log: opts.log,
  });
  opts.log.info(
    { files: found.length, urls: urls.length, ...identity, transcode: found.filter((f) => f.transcode).length, copied, missing: missing.length },
    'inputs found',
  );
  const fresh = identity.added + identity.changed;
  return { found, urls, added: { added: fresh, known: Math.max(0, identity.distinct - fresh) }, identity, copied, missing };
}
