import type { LatencyModel, LogNormal } from './latency.js';
import { BEYOND_GRID_BACKOFF, nextPollAt, PollTables } from './schedule.js';

/**
 * When to poll a task.
 *
 * Every poll is a call (100 a minute, 1,000 an hour per key) and every task holds one
 * of 3 slots until a poll sees it finished. Poll early and calls run out; poll late and
 * slots sit on finished tasks. Which of the two costs more depends on which resource
 * binds the run: on long runs the hour window does (each extra poll per photo costs
 * about 1/3 of a photo), on short runs or slow tasks the slots do.
 *
 * So each task's latency is predicted as a lognormal — from the create's `waitTime`
 * hint scaled by the learned ratio of true latency to hint, else from the learned
 * latency of its capability — and polls go where they cost least for a price λ per poll
 * in slot time (schedule.ts: the optimal schedule for that lognormal). λ is tuned by the
 * lane: it rises while calls bind and falls while slots bind, settling where both are
 * just used, and never falls below what the calls left in the hour can pay for.
 *
 * Measured on W1 (10,000 enhance photos, hour-bound): fixed 3 s polling spends ~9 calls
 * a photo; darkroom ~3.2.
 */

export interface PollPlannerOptions {
  readonly minIntervalMs: number;
  readonly maxIntervalMs: number;
  /** Bounds of λ, the price of a poll in slot-milliseconds. */
  readonly priceMinMs: number;
  readonly priceMaxMs: number;
  readonly priceStartMs: number;
}

export const DEFAULT_PLANNER: PollPlannerOptions = {
  minIntervalMs: 500,
  maxIntervalMs: 120_000,
  priceMinMs: 1,
  priceMaxMs: 600_000,
  // Half a typical task: about two polls a task until the lane has seen which resource binds.
  priceStartMs: 10_000,
};

const TOLERANCE = 0.03;
/** Tasks of a capability seen finished before its latency model is trusted without a hint. */
const WARMUP_TASKS = 10;

/** One lane's poll timing: the shared latency model, and this lane's price of a poll. */
export class PollPlanner {
  private logPrice: number;
  private logFloor: number;
  private readonly tables = new PollTables();
  /** Capabilities seen, and whether their tasks came with a hint: for the floor. */
  private readonly seen = new Map<string, boolean>();

  constructor(
    readonly latency: LatencyModel,
    private readonly opts: PollPlannerOptions = DEFAULT_PLANNER,
  ) {
    this.logPrice = Math.log(opts.priceStartMs);
    this.logFloor = Math.log(opts.priceMinMs);
  }

  /**
   * The lowest price the calls left can pay for: when the rest of the run fits in the
   * hour window with `sparePerTask` polls to spare per task, schedules may not expect more
   * than 1 + spare polls a task, or the run would spill past the window and wait an hour.
   */
  setSpare(sparePerTask: number | null): void {
    let floor = this.opts.priceMinMs;
    if (sparePerTask !== null) {
      for (const [capability, hinted] of this.seen) {
        const { mu, sigma } = this.typical(capability, hinted);
        floor = Math.max(floor, Math.exp(mu) * this.tables.priceFor(sigma, 1 + Math.max(0, sparePerTask)));
      }
    }
    this.logFloor = Math.log(Math.min(this.opts.priceMaxMs, floor));
    if (this.logPrice < this.logFloor) this.logPrice = this.logFloor;
  }

  /** λ: slot-milliseconds one poll is worth spending. */
  get priceMs(): number {
    return Math.exp(this.logPrice);
  }

  /** Delay from acceptance to the first poll. */
  firstDelay(capability: string, hintMs: number | null): number {
    return this.delay(capability, hintMs, 0);
  }

  /** Delay from now to the next poll of a task that was running `elapsedMs` after acceptance. */
  nextDelay(capability: string, hintMs: number | null, elapsedMs: number): number {
    return this.delay(capability, hintMs, elapsedMs);
  }

  /**
   * Move λ: up for time in which the call budget held work back, down for time in which
   * the slots did while calls went unused. `scaleMs` is the typical task latency, so λ
   * moves at a pace that suits a 5 s task as well as a 60 s one.
   */
  adjust(callBoundMs: number, slotBoundMs: number, scaleMs: number): void {
    // Calls held work back nearly all the time when they bind (each one waits its turn),
    // while unused calls are lost for good: so unused time weighs 1/TOLERANCE as much,
    // and λ settles where calls go unused about TOLERANCE of the time.
    const net = TOLERANCE * callBoundMs - slotBoundMs;
    if (net === 0) return;
    const step = Math.max(-0.1, Math.min(0.1, (0.5 * net) / Math.max(1000, scaleMs)));
    this.logPrice = Math.min(Math.log(this.opts.priceMaxMs), Math.max(this.logFloor, this.logPrice + step));
  }

  private typical(capability: string, hinted: boolean): LogNormal {
    const base = this.latency.predict(capability, null);
    return hinted ? this.latency.predict(capability, Math.exp(base.mu)) : base;
  }

  private delay(capability: string, hintMs: number | null, elapsedMs: number): number {
    const hinted = hintMs !== null && hintMs > 0;
    if (elapsedMs === 0) this.seen.set(capability, hinted);
    const clamp = (d: number) => Math.round(Math.min(this.opts.maxIntervalMs, Math.max(this.opts.minIntervalMs, d)));
    if (!hinted && this.latency.samples(capability) < WARMUP_TASKS) {
      // Nothing known yet: probe at 1, 2, 4, 8… s. A poll aimed by the prior alone would
      // find a fast task long finished and learn little from it ("done by 40 s").
      return clamp(elapsedMs > 0 ? elapsedMs : 1000);
    }
    const { mu, sigma } = this.latency.predict(capability, hintMs);
    const median = Math.exp(mu);
    const at = nextPollAt(this.tables.get(sigma, this.priceMs / median), elapsedMs / median) * median;
    return clamp(Number.isNaN(at) ? elapsedMs * (BEYOND_GRID_BACKOFF - 1) : at - elapsedMs);
  }
}
