import PQueue from 'p-queue';
import { clock } from '../../clock.js';
import type { RunContext } from '../context.js';
import { downloadStage } from './download.js';
import { guarded } from './stage.js';

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

/** What one round of downloads is told by the drive phase. */
export interface DownloadRound {
  readonly patience: Patience;
  /** Whether the lanes are done: then only downloads are left, for the run's patience. */
  readonly lanesDone: () => boolean;
  /** A download whose result URL expired handed its photo back to be polled for a fresh one. */
  readonly handBack: () => void;
}

const download = guarded(downloadStage, 'retry');

/**
 * Downloads are not API calls: they run beside the lanes, a few at a time. None starts once
 * the run is stopped (interrupt, invalid key, not subscribed); those in flight finish or are
 * aborted with the run's other calls.
 *
 * A failed download is tried again with backoff for as long as the lanes have work, then
 * for at most the run's patience; what is still not on disk then stays `succeeded`, counted
 * as "paid, not yet downloaded", and the next run downloads it first. An output folder that
 * cannot take files (full, read-only) stops new creates and uploads at once (download.ts,
 * exit 1), while the tasks already paid for are polled and their results retried.
 */
export async function downloadLoop(ctx: RunContext, round: DownloadRound): Promise<void> {
  const { ledger, config, log, control, events } = ctx;
  const { patience } = round;
  // limits.downloads at once; `inflight` names them, so the ledger never hands one out twice.
  const pool = new PQueue({ concurrency: config.limits.downloads });
  const inflight = new Set<number>();
  let gaveUp = false;
  // A stage that threw (the ledger could not be written: SQLITE_FULL, say) stops the run, as a lane's does.
  const crashed = (err: unknown) => control.crashed(err);
  const safely = (fn: () => void) => {
    try {
      fn();
    } catch (err) {
      crashed(err);
    }
  };
  for (;;) {
    if (control.stopped || !control.ledgerOk()) break;
    const now = clock.now();
    const lanesDone = round.lanesDone();
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
          download(ctx, item)
            .then(async (outcome) => {
              safely(() => {
                // Past the patience a fresh URL is not asked for now (a poll, an API call, for a
                // download this run would not make): the task stays `active`, and the next run's
                // first poll gets the URL.
                if (outcome === 'refresh' && !patience.over(clock.now())) round.handBack();
                // A photo redone under new steps: its files made under the old ones go once the new output is in.
                if (outcome === 'done') ctx.outputs.retireStale(item.id);
              });
              // A photo redone after a name of it went (renamed while it waited for its redo): that name's files go now.
              if (outcome === 'done') await ctx.outputs.retireGoneNames(item.id);
            }, crashed)
            .catch(crashed)
            .finally(() => {
              inflight.delete(item.id);
              safely(() => events.activity());
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
    await events.wait(wake);
  }
  await pool.onIdle();
  if (gaveUp) {
    log.warn(
      { waiting: ledger.outputs.waiting(), patienceMinutes: config.limits.downloadPatienceMinutes },
      "results still not downloaded after the run's patience; they stay paid-for, and the next run downloads them first",
    );
  }
}
