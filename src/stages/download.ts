import { existsSync } from 'node:fs';
import path from 'node:path';
import { clock } from '../clock.js';
import { crashPoint, type ItemRow, type Ledger } from '../ledger/index.js';
import type { Logger } from '../log.js';
import { fullJitter } from '../scheduler/backoff.js';
import { copyAtomically, writeBufferAtomically, writeStreamAtomically } from '../outputs/atomic.js';
import type { FileMetadata } from '../ledger/index.js';
import { carryStep, metadataNoteLine, NO_METADATA, type MetadataOptions } from '../outputs/metadata.js';
import { checkTargets, DEFAULT_OUTPUT, outputTargets, type NamingOptions } from '../outputs/naming.js';
import { writeOtherOutputs, type Placement, type WrittenResult } from '../outputs/otherOutputs.js';
import { type OutputFs } from '../outputs/outputfs.js';
import { withResult, type ResultFetch } from './result.js';
import { DownloadError, OutputWriteError } from '../errors.js';

export { TEMP_SUFFIX } from '../outputs/atomic.js';
export { type FetchedResult, type ResultFetch } from './result.js';

export interface DownloadOptions {
  readonly outputDir: string;
  /** Result URLs must be https unless the service itself is plain http (a local simulator). */
  readonly allowHttp: boolean;
  /** A whole download's deadline, not only an idle timeout. */
  readonly deadlineMs: number;
  readonly random: () => number;
  readonly log: Logger;
  /** How result URLs are fetched; the in-process simulator supplies its own. */
  readonly fetch?: ResultFetch;
  /** Aborts downloads in flight (an interrupt's grace period is over); they are retried next run. */
  readonly abort?: AbortSignal;
  /** output.layout, output.pattern, sidecars, intermediates (outputs/naming.ts); mirror `{name}.{ext}` when absent. */
  readonly naming?: NamingOptions;
  /** The file-system calls that write outputs (outputs/outputfs.ts); tests inject a full or read-only disk here. */
  readonly fs?: OutputFs;
  /** The input's metadata on the outputs and the XMP sidecars (outputs/metadata.ts); absent: none. */
  readonly metadata?: MetadataOptions;
  /**
   * The output folder cannot take files (ENOSPC, EROFS, EACCES, EDQUOT…): the runner stops
   * new creates. The photo itself stays paid-for and is retried.
   */
  readonly onDiskError?: (err: OutputWriteError) => void;
}

/**
 * A failed download or write is tried again after exponential backoff with full jitter,
 * capped here. Two minutes: a result-host outage measured in practice lasted two minutes,
 * so a result waits at most about that long after its host is back, and a host that stays
 * down costs one GET per photo every minute or so (GETs of result URLs are not API calls).
 */
const DOWNLOAD_RETRY_CAP_MS = 2 * 60_000;

/**
 * Result URLs of one task answered at once by a fresh poll for a new URL when they expire.
 * Past this the service keeps handing out URLs that do not work: each further refresh waits
 * a backoff first (capped at URL_REFRESH_CAP_MS), since each costs a poll, an API call.
 */
const MAX_URL_REFRESHES = 3;
/** At most about six refresh polls an hour for such a photo: under 1% of a 1,000-call hour. */
const URL_REFRESH_CAP_MS = 10 * 60_000;

export type DownloadOutcome = 'done' | 'retry' | 'refresh' | 'parked';

/**
 * succeeded → downloading → done (L4), or back to succeeded: the result is streamed to a
 * temp file in the output's own folder, fsynced and checked (status, length, image bytes),
 * renamed into place, and the folder fsynced, before the ledger says done. Result URLs are
 * fetched with no key header (L5): they are public and on another host.
 *
 * A task that reached SUCCESS is paid for, so nothing here ever fails the photo: a download
 * or write that failed is retried with backoff ('retry'), an expired URL is polled for a
 * fresh one ('refresh'), and what this run cannot fix (a file of the operator's at the
 * output path, a name too long for the file system) is parked until the next run with a
 * reason saying what to do ('parked').
 */
export async function downloadStage(ledger: Ledger, item: ItemRow, opts: DownloadOptions): Promise<DownloadOutcome> {
  let claimed = ledger.outputs.start(item);
  const write = { fs: opts.fs };
  try {
    const written = await withResult(claimed.result_url!, opts, async (r) => {
      // Every name of the photo gets an output (outputs/naming.ts); the first is the item's own.
      const targets = outputTargets(ledger, claimed, r.ext, opts.outputDir, opts.naming);
      const target = targets[0]!.path;
      checkTargets(ledger, claimed, targets.slice(1));
      claimed = ledger.outputFiles.adoptOutput(claimed, target);
      const owner = ledger.outputs.ownerOf(target);
      if (owner !== undefined && owner.id !== claimed.id) {
        throw new DownloadError(
          'OUTPUT_TAKEN',
          `${target} is the output of ${owner.rel_path} already (two inputs differ only in their extension); rename one of them and run again`,
          true,
        );
      }
      if (owner === undefined && existsSync(target)) {
        throw new DownloadError(
          'OUTPUT_EXISTS',
          `${target} already exists and was not written by this ledger; move it away and run again`,
          true,
        );
      }
      // Claimed before the rename: a crash between the rename and `done` leaves a file this
      // item owns, which the next run overwrites with the same bytes instead of refusing.
      // The claim is one guarded statement, so two downloads racing for a path cannot both win.
      const rival = ledger.outputs.claim(claimed, target);
      if (rival !== undefined) {
        throw new DownloadError(
          'OUTPUT_TAKEN',
          `${target} is the output of ${rival.rel_path} already (two inputs differ only in their extension); rename one of them and run again`,
          true,
        );
      }
      claimed = { ...claimed, output_path: target };
      let meta: FileMetadata = NO_METADATA;
      const naming = opts.naming ?? { output: DEFAULT_OUTPUT, steps: [] };
      const last = Math.max(0, naming.steps.length - 1);
      const finalize = opts.metadata
        ? carryStep(opts.metadata, ledger, claimed, targets[0]!, r.ext, last, naming, (m) => (meta = m), opts.fs, opts.log)
        : undefined;
      const facts = await writeStreamAtomically(target, r, opts.outputDir, { ...write, ...(finalize ? { finalize } : {}) });
      crashPoint('output');
      if (meta.note !== null) opts.log.warn({ item: claimed.id, file: target }, metadataNoteLine(meta));
      const result: WrittenResult = {
        path: target,
        bytes: facts.bytes,
        facts,
        ext: r.ext,
        meta,
        ...(r.rest === null && meta.level === 'none' ? { data: r.head } : {}),
      };
      return { targets, result };
    });
    await writeOtherOutputs(ledger, claimed, written.result, written.targets, {
      outputDir: opts.outputDir,
      naming: opts.naming,
      metadata: opts.metadata,
      fs: opts.fs,
      log: opts.log,
      write: (t, b) => writeBufferAtomically(t, b, opts.outputDir, write),
      copy: (t, from, w) =>
        from.data
          ? writeBufferAtomically(t, from.data, opts.outputDir, { ...write, ...w })
          : copyAtomically(from.path, t, opts.outputDir, { ...write, ...w }),
      download: (url, place) => downloadTo(url, place, opts),
    });
    ledger.outputs.done(claimed, written.result.path);
    return 'done';
  } catch (err) {
    if (opts.abort?.aborted) {
      // Interrupted, not failed: the next run downloads it again, with no retry spent.
      ledger.outputs.interrupted(claimed);
      return 'retry';
    }
    return afterFailure(ledger, claimed, err, opts);
  }
}

function afterFailure(ledger: Ledger, claimed: ItemRow, err: unknown, opts: DownloadOptions): DownloadOutcome {
  const now = clock.now();
  const backoff = (failures: number, capMs = DOWNLOAD_RETRY_CAP_MS) => now + 1000 + fullJitter(failures, opts.random, 1000, capMs);
  if (err instanceof OutputWriteError) {
    opts.log.warn({ item: claimed.id, code: err.errno }, err.message);
    if (err.errno === 'ENAMETOOLONG') {
      ledger.outputs.park(
        claimed,
        `${err.message}: the output's name is longer than the file system allows; shorten the input's name or output.pattern and run again`,
      );
      return 'parked';
    }
    if (err.disk) opts.onDiskError?.(err);
    ledger.outputs.retryLater(claimed, err.message, backoff(claimed.retries));
    return 'retry';
  }
  const e = err instanceof DownloadError ? err : new DownloadError('DOWNLOAD_FAILED', String((err as Error)?.message ?? err), false);
  opts.log.warn({ item: claimed.id, code: e.why }, e.message);
  if (e.why === 'RESULT_EXPIRED' && claimed.task_id !== null) {
    const refreshes = ledger.outputs.urlRefreshes(claimed);
    // Past MAX_URL_REFRESHES a refresh comes only after a wait (retries > 0: this failure
    // follows one), so a service that keeps giving out dead links costs few polls.
    if (refreshes < MAX_URL_REFRESHES || claimed.retries > 0) {
      ledger.outputs.refreshUrl(claimed, `${e.message}; polling task ${claimed.task_id} for a fresh URL`, now);
      return 'refresh';
    }
    ledger.outputs.retryLater(
      claimed,
      `${e.message}, after ${refreshes} fresh URL(s) from the service; asking for another later`,
      backoff(refreshes - MAX_URL_REFRESHES, URL_REFRESH_CAP_MS),
    );
    return 'retry';
  }
  if (e.permanent) {
    ledger.outputs.park(claimed, e.message);
    return 'parked';
  }
  ledger.outputs.retryLater(claimed, e.message, backoff(claimed.retries));
  return 'retry';
}

/**
 * Fetch a result URL (an intermediate's) straight into the file `place` names once the
 * result's type is known (null: not wanted, dropped unread); checked and streamed as the
 * final result is.
 */
async function downloadTo(url: string, place: (ext: string) => Placement, opts: DownloadOptions): Promise<WrittenResult | null> {
  return withResult(url, opts, async (r) => {
    const where = place(r.ext);
    if (where === null) return null;
    const facts = await writeStreamAtomically(where.target, r, opts.outputDir, { ...(opts.fs ? { fs: opts.fs } : {}), ...where.write });
    // The metadata the file carries is its placement's to record; `data` only when the file is the service's bytes.
    return {
      path: where.target,
      bytes: facts.bytes,
      facts,
      ext: r.ext,
      meta: NO_METADATA,
      ...(r.rest === null && !where.write.finalize ? { data: r.head } : {}),
    };
  });
}

/** `<output.dir>/<rel dir>/<name>.<ext>`, refusing any path that would leave the output folder. */
export function outputPathFor(outputDir: string, relPath: string, ext: string): string {
  const parsed = path.posix.parse(relPath);
  const rel = path.join(...parsed.dir.split('/').filter(Boolean), `${parsed.name}.${ext}`);
  const target = path.resolve(outputDir, rel);
  const back = path.relative(path.resolve(outputDir), target);
  if (back.startsWith('..') || path.isAbsolute(back)) {
    throw new DownloadError('OUTPUT_ESCAPE', `output path for ${relPath} would leave the output folder`, true);
  }
  return target;
}
