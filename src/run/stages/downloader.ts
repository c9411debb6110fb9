import PQueue from 'p-queue';
import { clock } from '../../clock.js';
import type { Config } from '../../config/index.js';
import type { Ledger } from '../../ledger/index.js';
import type { Logger } from '../../log.js';
import type { Notifier } from '../../scheduler/lane/notifier.js';
import { haltRun, type RunState } from './context.js';
import { downloadStage, type DownloadOptions } from './download.js';
import { namingOptions } from '../../outputs/naming.js';
import type { MetadataOptions } from '../../outputs/metadata.js';
import type { OutputFs } from '../../outputs/outputfs.js';
import type { ResultFetch } from './result.js';
import { EXIT, type OutputWriteError } from '../../errors.js';

export interface DownloaderOptions {
  readonly ledger: Ledger;
  readonly config: Config;
  readonly log: Logger;
  readonly random: () => number;
  /** Aborts downloads in flight (an interrupt's grace period is over). */
  readonly abort: AbortSignal;
  readonly allowHttp: boolean;
  readonly resultFetch?: ResultFetch | undefined;
  readonly fs?: OutputFs | undefined;
  /** The input's metadata on the outputs and the XMP sidecars (outputs/metadata.ts). */
  readonly metadata?: MetadataOptions | undefined;
  readonly onActivity?: (() => void) | undefined;
  /** Wake the lanes so they see a stop or a halt at once. */
  readonly wakeLanes?: (() => void) | undefined;
  /** Whether the ledger is still the file at its path (ledgerGuard); false halts the run, no download starts. */
  readonly ledgerOk?: (() => boolean) | undefined;
  /** After an item's output is in place and the item is done. */
  readonly onDone?: ((itemId: number) => void) | undefined;
}

/**
 * How long the run keeps trying the downloads left once nothing else is left to do
 * (limits.downloadPatienceMinutes). Set the first time the lanes are done and kept across
 * the runner's rounds (a hand-back for a fresh URL starts the lanes again without
 * restarting the clock).
 */
export class Patience {
  private untilMs: number | undefined;
  constructor(readonly ms: number) {}

  /** Start counting (if not started yet); when it ends. */
  start(now: number): number {
    this.untilMs ??= now + this.ms;
    return this.untilMs;
  }

  over(now: number): boolean {
    return this.untilMs !== undefined && now >= this.untilMs;
  }
}

/** The one line a run stopped by its output folder ends with (RunHalt `disk`, exit 1). */
function diskHaltMessage(err: OutputWriteError): string {
  return `the output folder cannot take files: ${err.message}; no new photo is uploaded or created, the ones paid for are kept: free space or fix the folder, then run darkroom again to download them and continue`;
}

/**
 * Downloads are not API calls: they run beside the lanes, a few at a time. None starts once
 * the run is stopped (interrupt, invalid key, not subscribed); those in flight finish or are
 * aborted with the run's other calls.
 *
 * A failed download is tried again with backoff for as long as the lanes have work, then
 * for at most the run's patience; what is still not on disk then stays `succeeded`, counted
 * as "paid, not yet downloaded", and the next run downloads it first. An output folder that
 * cannot take files (full, read-only) stops new creates and uploads at once (haltRun, exit
 * 1), while the tasks already paid for are polled and their results retried.
 */
export async function downloadLoop(
  o: DownloaderOptions,
  run: RunState,
  activity: Notifier,
  handBack: () => void,
  producersDone: () => boolean,
  patience: Patience,
): Promise<void> {
  const { ledger, config, log } = o;
  // limits.downloads at once; `inflight` names them, so the ledger never hands one out twice.
  const pool = new PQueue({ concurrency: config.limits.downloads });
  const inflight = new Set<number>();
  const dl: DownloadOptions = {
    abort: o.abort,
    outputDir: config.output.dir,
    naming: namingOptions(config),
    allowHttp: o.allowHttp,
    deadlineMs: 5 * 60_000,
    random: o.random,
    log,
    ...(o.resultFetch ? { fetch: o.resultFetch } : {}),
    ...(o.fs ? { fs: o.fs } : {}),
    ...(o.metadata ? { metadata: o.metadata } : {}),
    onDiskError: (err) => {
      if (run.halt === undefined)
        log.error({ code: err.errno, file: err.file }, `output folder cannot take files: ${err.message}; no new creates`);
      haltRun(run, { kind: 'disk', immediate: false, exitCode: EXIT.someFailed, message: diskHaltMessage(err) });
      o.wakeLanes?.();
    },
  };
  let gaveUp = false;
  // A stage that threw (the ledger could not be written: SQLITE_FULL, say) stops the run, as a lane's does.
  let crash: { err: unknown } | undefined;
  const crashed = (err: unknown) => {
    crash ??= { err };
    run.stopped = true;
    o.wakeLanes?.();
  };
  const guarded = (fn: () => void) => {
    try {
      fn();
    } catch (err) {
      crashed(err);
    }
  };
  for (;;) {
    if (run.stopped || o.ledgerOk?.() === false) break;
    const now = clock.now();
    const lanesDone = producersDone();
    const deadline = lanesDone ? patience.start(now) : Infinity;
    const patient = !patience.over(now);
    while (patient && inflight.size < config.limits.downloads) {
      const item = ledger.outputs.nextToDownload(now, inflight);
      if (!item) break;
      inflight.add(item.id);
      // Nothing may throw out of this chain: the pool's promise is never awaited, so a throw
      // would be the host process's unhandled rejection.
      void pool
        .add(() =>
          downloadStage(ledger, item, dl)
            .then(
              (outcome) =>
                guarded(() => {
                  // Past the patience a fresh URL is not asked for now (a poll, an API call, for a
                  // download this run would not make): the task stays `active`, and the next run's
                  // first poll gets the URL.
                  if (outcome === 'refresh' && !patience.over(clock.now())) handBack();
                  if (outcome === 'done') o.onDone?.(item.id);
                }),
              crashed,
            )
            .finally(() => {
              inflight.delete(item.id);
              activity.notify();
              guarded(() => o.onActivity?.());
            }),
        )
        .catch(crashed);
    }
    const waiting = ledger.outputs.waiting() - inflight.size;
    if (lanesDone && inflight.size === 0 && (waiting <= 0 || !patient)) {
      gaveUp = waiting > 0;
      break;
    }
    const next = waiting > 0 && patient ? ledger.outputs.earliestDue() : undefined;
    const wake = Math.min(next !== undefined && next > now ? next : Infinity, deadline);
    await activity.wait(wake);
  }
  await pool.onIdle();
  if (crash) throw crash.err;
  if (gaveUp) {
    log.warn(
      { waiting: ledger.outputs.waiting(), patienceMinutes: config.limits.downloadPatienceMinutes },
      "results still not downloaded after the run's patience; they stay paid-for, and the next run downloads them first",
    );
  }
}
