import { clock } from '../../clock.js';
import type { ItemRow } from '../../ledger/index.js';
import { fullJitter } from '../../scheduler/budget/backoff.js';
import type { Placement, WrittenResult } from '../../outputs/otherOutputs.js';
import type { RunContext } from '../context.js';
import { withResult, type ResultOptions } from './result.js';
import { DownloadError, EXIT, OutputWriteError } from '../../errors.js';

/** A whole download's deadline (headers and every byte), not only an idle timeout. */
const DOWNLOAD_DEADLINE_MS = 5 * 60_000;

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
export async function downloadStage(ctx: RunContext, item: ItemRow): Promise<DownloadOutcome> {
  const { ledger, outputs } = ctx;
  // The photo's row as it is claimed, for the ledger's account of what became of it.
  const at = { item: ledger.outputs.start(item) };
  try {
    const first = await withResult(at.item.result_url!, resultOptions(ctx), (r) => outputs.writeFirst(at, r));
    await outputs.writeOthers(at.item, first, (url, place) => fetchInto(ctx, url, place));
    ledger.outputs.done(at.item, first.result.path);
    return 'done';
  } catch (err) {
    if (ctx.control.abort.aborted) {
      // Interrupted, not failed: the next run downloads it again, with no retry spent.
      ledger.outputs.interrupted(at.item);
      return 'retry';
    }
    return afterFailure(ctx, at.item, err);
  }
}

/** How the run's result URLs are fetched: https unless the service itself is plain http (a local simulator). */
function resultOptions(ctx: RunContext): ResultOptions {
  const seams = ctx.request.seams;
  return {
    allowHttp: ctx.baseUrl.startsWith('http:'),
    deadlineMs: seams?.downloadDeadlineMs ?? DOWNLOAD_DEADLINE_MS,
    abort: ctx.control.abort,
    fetch: seams?.resultFetch,
  };
}

/** An intermediate's result, fetched and checked as the final result is, into the file `place` names. */
function fetchInto(ctx: RunContext, url: string, place: (ext: string) => Placement): Promise<WrittenResult | null> {
  return withResult(url, resultOptions(ctx), (r) => ctx.outputs.writePlaced(r, place));
}

/**
 * The output folder cannot take files (ENOSPC, EROFS, EACCES, EDQUOT…): no new photo is
 * uploaded or created, the ones paid for are kept (RunHalt `disk`, exit 1). The photo itself
 * stays paid-for and is retried.
 */
function diskCannotTake(ctx: RunContext, err: OutputWriteError): void {
  if (ctx.control.halt === undefined)
    ctx.log.error({ code: err.errno, file: err.file }, `output folder cannot take files: ${err.message}; no new creates`);
  ctx.control.stop({
    kind: 'disk',
    immediate: false,
    exitCode: EXIT.someFailed,
    message: `the output folder cannot take files: ${err.message}; no new photo is uploaded or created, the ones paid for are kept: free space or fix the folder, then run darkroom again to download them and continue`,
  });
}

function afterFailure(ctx: RunContext, claimed: ItemRow, err: unknown): DownloadOutcome {
  const { ledger, log } = ctx;
  const now = clock.now();
  const backoff = (failures: number, capMs = DOWNLOAD_RETRY_CAP_MS) => now + 1000 + fullJitter(failures, ctx.random, 1000, capMs);
  if (err instanceof OutputWriteError) {
    log.warn({ item: claimed.id, code: err.errno }, err.message);
    if (err.errno === 'ENAMETOOLONG') {
      ledger.outputs.park(
        claimed,
        `${err.message}: the output's name is longer than the file system allows; shorten the input's name or output.pattern and run again`,
      );
      return 'parked';
    }
    if (err.disk) diskCannotTake(ctx, err);
    ledger.outputs.retryLater(claimed, err.message, backoff(claimed.retries));
    return 'retry';
  }
  const e = err instanceof DownloadError ? err : new DownloadError('DOWNLOAD_FAILED', String((err as Error)?.message ?? err), false);
  log.warn({ item: claimed.id, code: e.why }, e.message);
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
