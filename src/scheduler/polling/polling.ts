import type { LatencyModel } from './latency.js';
import type { LogNormal } from './normal.js';
import { BEYOND_GRID_BACKOFF, nextPollAt, PollTables } from './schedule.js';
import { PRICE_FLOOR_MS, priceFromBudget, taskPrice, type WorkLeft } from './price.js';

/**
 * When to poll a task.
 *
 * Every poll is a call (100 a minute, 1,000 an hour per key) and every task holds one
 * of 3 slots until a poll sees it finished. Poll early and calls run out; poll late and
 * slots sit on finished tasks. Which of the two costs more depends on which resource
 * binds the run: on long runs the hour window does (each extra poll per photo costs
 * about 1/3 of a photo), on short runs or slow tasks the slots do.
 *
 * So each task's latency is predicted — located by the create's `waitTime` hint as far
 * as hints have proved worth trusting, else by the learned latency of its capability, and
 * shaped by the learned distribution around that (latency.ts, empirical.ts: no shape
 * assumed) — and polls go where they cost least for a price λ per poll in slot time
 * (schedule.ts: the optimal schedule for that distribution).
 *
 * λ is one price, from the work left against the calls left (price.ts): the lowest price
 * whose polls still fit in the windows before the slots finish the work. When the windows
 * will not bind before the job ends (short jobs, the last photos of a long one) that is the
 * floor, and polls cut the lag; when they bind, it is where calls and slots run out
 * together. While the hour window binds the run (calls paced at the hour rate) the lane
 * tunes λ by feedback instead — up while calls held work back, down while slots did:
 * that holds W1 (hour-bound) at 0.95, where the work-left price alone does worse.
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

const DEFAULT_PLANNER: PollPlannerOptions = {
  minIntervalMs: 500,
  maxIntervalMs: 120_000,
  priceMinMs: 1,
  priceMaxMs: 600_000,
  // Half a typical task: about two polls a task until the lane has seen which resource binds.
  priceStartMs: 10_000,
};

const TOLERANCE = 0.03;
/** Unhinted tasks probed at doubling intervals while calls are scarce. */
const PROBED_TASKS = 1;
/** Share of the way to the budget's price the price moves at each reading (every 5 s or so). */
const PRICE_FOLLOW = 0.3;

/** One lane's poll timing: the shared latency model, and this lane's price of a poll. */
export class PollPlanner {
  private logPrice: number;
  private logFloor: number;
  private readonly tables = new PollTables();
  /** Capabilities seen, and whether their tasks came with a hint: for the floor. */
  private readonly seen = new Map<string, boolean>();
  /** λ from the budget (price.ts) while the hour does not pace the run; null: feedback. */
  private budgetPrice: number | null = null;
  /** The relative floor's divisor for the work left, as the budget's price was found with (price.ts priceFromBudget). */
  private share = 1;

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

  /**
   * The price from the work left and the calls left (price.ts); null while the hour window
   * paces the run, when feedback (adjust) sets it. Returns the price set.
   */
  setBudget(work: WorkLeft | null): { priceMs: number; binding: number } | null {
    if (work === null) {
      this.budgetPrice = null;
      this.share = 1;
      return null;
    }
    const caps = work.capabilities.length > 0 ? work.capabilities : [...this.seen.keys()];
    const r = priceFromBudget(
      work,
      caps.map((c) => this.latency.typical(c)),
    );
    this.share = r.share;
    // Followed in log steps of at most 30%: the calls to spare are a small difference of
    // large counts (W3: 100 of 1,000), and a price that jumps threefold every few seconds
    // spends the same calls less well than a steady one.
    const target = Math.log(Math.min(this.opts.priceMaxMs, r.priceMs));
    const last = this.budgetPrice === null ? target : Math.log(this.budgetPrice);
    this.budgetPrice = Math.exp(last + PRICE_FOLLOW * (target - last));
    // Feedback resumes from here if the hour starts to bind.
    this.logPrice = Math.max(this.logFloor, Math.log(this.budgetPrice));
    return r;
  }

  /** λ: slot-milliseconds one poll is worth spending. */
  get priceMs(): number {
    return this.budgetPrice ?? Math.exp(this.logPrice);
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

  /**
   * The chance that a task seen running `runningMs` after acceptance has ended by
   * `elapsedMs`, as the latency model sees tasks of its kind.
   */
  endedChance(capability: string, hintMs: number | null, runningMs: number, elapsedMs: number): number {
    const { scaleMs, dist } = this.latency.predictive(capability, hintMs);
    const before = runningMs > 0 ? dist.cdf(runningMs / scaleMs) : 0;
    if (before >= 1) return 1;
    return Math.max(0, (dist.cdf(elapsedMs / scaleMs) - before) / (1 - before));
  }

  private typical(capability: string, hinted: boolean): LogNormal {
    const base = this.latency.predict(capability, null);
    return hinted ? this.latency.predict(capability, Math.exp(base.mu)) : base;
  }

  private delay(capability: string, hintMs: number | null, elapsedMs: number): number {
    const hinted = hintMs !== null && hintMs > 0;
    if (elapsedMs === 0) this.seen.set(capability, hinted);
    const clamp = (d: number) => Math.round(Math.min(this.opts.maxIntervalMs, Math.max(this.opts.minIntervalMs, d)));
    const { scaleMs, dist } = this.latency.predictive(capability, hintMs);
    // Calls plentiful (the price at its floor), the first tasks are polled densely by the
    // prior's wide schedule and the model learns from narrow intervals at once. Scarce: a
    // hint aims well enough; without one, the first tasks probe at 1, 2, 4, 8… s — the
    // first only, as probes cost calls a call-bound key has not got (four
    // probes on ten tasks were half a call a photo at 20 calls a minute).
    const plentiful = this.budgetPrice !== null && this.budgetPrice <= PRICE_FLOOR_MS;
    if (!plentiful && !hinted && this.latency.samples(capability) < PROBED_TASKS) return clamp(elapsedMs > 0 ? elapsedMs : 1000);
    const at = nextPollAt(dist.table(taskPrice(this.priceMs, scaleMs, this.share) / scaleMs), elapsedMs / scaleMs) * scaleMs;
    return clamp(Number.isNaN(at) ? elapsedMs * (BEYOND_GRID_BACKOFF - 1) : at - elapsedMs);
  }
}
