import { errorFunction, probit } from 'simple-statistics';

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
 * latency of its capability — and the next poll goes where the task has finished with
 * probability θ given that the last poll saw it running. θ is tuned by the lane: it
 * rises while calls bind and falls while slots bind, settling where both are just used.
 *
 * Measured on W1 (10,000 enhance photos, hour-bound): fixed 3 s polling spends ~9 calls
 * a photo; θ settling near 0.9 spends ~3.2.
 */

export interface LogNormal {
  /** Mean of ln(x). */
  readonly mu: number;
  /** Standard deviation of ln(x). */
  readonly sigma: number;
}

const SQRT2 = Math.SQRT2;
const normalCdf = (z: number): number => 0.5 * (1 + errorFunction(z / SQRT2));
const normalPdf = (z: number): number => Math.exp(-0.5 * z * z) / Math.sqrt(2 * Math.PI);

/** Online estimate of a log-quantity's mean and spread: plain averages first, then a slow EWMA. */
class LogEstimate {
  private n = 0;
  private mean: number;
  private variance: number;

  constructor(
    prior: LogNormal,
    private readonly priorWeight = 4,
    private readonly floor = 0.02,
  ) {
    this.mean = prior.mu;
    this.variance = prior.sigma ** 2;
  }

  /**
   * A value known only to lie in (lo, hi] (logs; lo may be -Infinity): one step of EM for
   * interval-censored data. The expected value and spread of x given the interval, under
   * the current estimate, are folded in. Taking the midpoint instead would teach the
   * poller that tasks found done at the first poll took half that long, and it would
   * poll ever earlier.
   */
  addInterval(lo: number, hi: number): void {
    const { mu, sigma } = this.value;
    const a = (lo - mu) / sigma;
    const b = (hi - mu) / sigma;
    const z = normalCdf(b) - (Number.isFinite(a) ? normalCdf(a) : 0);
    let ex: number;
    let ex2: number;
    if (z > 1e-9) {
      const pa = Number.isFinite(a) ? normalPdf(a) : 0;
      const pb = normalPdf(b);
      const m1 = (pa - pb) / z;
      const apa = Number.isFinite(a) ? a * pa : 0;
      ex = mu + sigma * m1;
      ex2 = sigma * sigma * (1 + (apa - b * pb) / z);
    } else {
      // Far outside what we believed: take the interval's end as a plain sample.
      ex = Number.isFinite(lo) ? (lo + hi) / 2 : hi;
      ex2 = (ex - mu) ** 2;
    }
    const w = Math.max(this.floor, 1 / (this.n + this.priorWeight + 1));
    const shift = ex - this.mean;
    this.mean += w * shift;
    // ex2 is the spread around the old mean; re-centre it on the new one.
    this.variance = (1 - w) * this.variance + w * Math.max(0, ex2 + (mu - this.mean) ** 2 - 0);
    this.n++;
  }

  get samples(): number {
    return this.n;
  }

  get value(): LogNormal {
    // A spread below 0.05 would make the poller trust one number too much.
    return { mu: this.mean, sigma: Math.max(0.05, Math.sqrt(this.variance)) };
  }
}

export interface LatencyPriors {
  /** ln(latency / waitTime hint), when the service gives a hint. */
  readonly ratio: LogNormal;
  /** ln(latency in ms), when it does not. */
  readonly latency: LogNormal;
}

export const DEFAULT_PRIORS: LatencyPriors = {
  ratio: { mu: 0, sigma: 0.4 },
  // The service's tasks take tens of seconds; the spread is wide until we have seen some.
  latency: { mu: Math.log(20_000), sigma: 0.8 },
};

/** Task latency learned online per capability, from the interval each task ended in. */
export class LatencyModel {
  private readonly withHint = new Map<string, LogEstimate>();
  private readonly without = new Map<string, LogEstimate>();

  constructor(private readonly priors: LatencyPriors = DEFAULT_PRIORS) {}

  /**
   * A task ended somewhere in (loMs, hiMs] after acceptance: after the last poll that
   * saw it running and by the first that saw it finished.
   */
  observe(capability: string, hintMs: number | null, loMs: number, hiMs: number): void {
    if (!(hiMs > 0)) return;
    const lo = loMs > 0 ? Math.log(loMs) : Number.NEGATIVE_INFINITY;
    const hi = Math.log(Math.max(hiMs, loMs + 1));
    if (hintMs !== null && hintMs > 0) {
      const h = Math.log(hintMs);
      this.estimate(this.withHint, capability, this.priors.ratio).addInterval(lo - h, hi - h);
    }
    this.estimate(this.without, capability, this.priors.latency).addInterval(lo, hi);
  }

  /**
   * The predicted lognormal latency (ms) of a task of this capability with this hint.
   * The hint is read as a noisy measurement of the latency (ln L ≈ ln hint + ratio) and
   * combined with what the capability's latencies look like: a task hinted far from
   * the usual is probably less unusual than its hint says. With W1's figures (spread
   * 0.5 of latencies, 0.3 of the hint's error) that narrows the prediction to 0.26.
   */
  predict(capability: string, hintMs: number | null): LogNormal {
    const base = this.estimate(this.without, capability, this.priors.latency).value;
    if (hintMs === null || !(hintMs > 0)) return base;
    const r = this.estimate(this.withHint, capability, this.priors.ratio).value;
    const pBase = 1 / base.sigma ** 2;
    const pHint = 1 / r.sigma ** 2;
    return {
      mu: (base.mu * pBase + (Math.log(hintMs) + r.mu) * pHint) / (pBase + pHint),
      sigma: 1 / Math.sqrt(pBase + pHint),
    };
  }

  /** Expected latency (ms) of a task of this capability, for ETAs and the plan. */
  meanMs(capability: string): number {
    const p = this.estimate(this.without, capability, this.priors.latency).value;
    return Math.exp(p.mu + (p.sigma * p.sigma) / 2);
  }

  samples(capability: string): number {
    return this.without.get(capability)?.samples ?? 0;
  }

  private estimate(map: Map<string, LogEstimate>, capability: string, prior: LogNormal): LogEstimate {
    let e = map.get(capability);
    if (!e) {
      e = new LogEstimate(prior);
      map.set(capability, e);
    }
    return e;
  }
}

export interface PollPlannerOptions {
  readonly minIntervalMs: number;
  readonly maxIntervalMs: number;
  readonly thetaMin: number;
  readonly thetaMax: number;
  readonly thetaStart: number;
}

export const DEFAULT_PLANNER: PollPlannerOptions = {
  minIntervalMs: 500,
  maxIntervalMs: 120_000,
  thetaMin: 0.3,
  thetaMax: 0.97,
  thetaStart: 0.8,
};

const TOLERANCE = 0.03;
/** Tasks of a capability seen finished before its latency model is trusted without a hint. */
const WARMUP_TASKS = 10;

/** One lane's poll timing: the shared latency model, and this lane's θ. */
export class PollPlanner {
  private thetaValue: number;
  private floor: number;

  constructor(
    readonly latency: LatencyModel,
    private readonly opts: PollPlannerOptions = DEFAULT_PLANNER,
  ) {
    this.thetaValue = opts.thetaStart;
    this.floor = opts.thetaMin;
  }

  /**
   * The lowest θ the calls left can pay for: when the rest of the run fits in the hour
   * window with `sparePerTask` polls to spare per task, θ may not fall below 1/(1+spare)
   * (about 1/θ polls a task), or the run would spill past the window and wait an hour.
   */
  setSpare(sparePerTask: number | null): void {
    const f = sparePerTask === null ? this.opts.thetaMin : 1 / (1 + Math.max(0, sparePerTask));
    this.floor = Math.min(this.opts.thetaMax, Math.max(this.opts.thetaMin, f));
    if (this.thetaValue < this.floor) this.thetaValue = this.floor;
  }

  get theta(): number {
    return this.thetaValue;
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
   * Move θ: up for time in which the call budget held work back, down for time in which
   * the slots did while calls went unused. `scaleMs` is the typical task latency, so θ
   * moves at a pace that suits a 5 s task as well as a 60 s one.
   */
  adjust(callBoundMs: number, slotBoundMs: number, scaleMs: number): void {
    // Calls held work back nearly all the time when they bind (each one waits its turn),
    // while unused calls are lost for good: so unused time weighs 1/TOLERANCE as much,
    // and θ settles where calls go unused about TOLERANCE of the time.
    const net = TOLERANCE * callBoundMs - slotBoundMs;
    if (net === 0) return;
    const step = Math.max(-0.02, Math.min(0.02, (0.05 * net) / Math.max(1000, scaleMs)));
    this.thetaValue = Math.min(this.opts.thetaMax, Math.max(this.floor, this.thetaValue + step));
  }

  private delay(capability: string, hintMs: number | null, elapsedMs: number): number {
    if ((hintMs === null || !(hintMs > 0)) && this.latency.samples(capability) < WARMUP_TASKS) {
      // Nothing known yet: probe at 1, 2, 4, 8… s. A poll aimed by the prior alone would
      // find a fast task long finished and learn little from it ("done by 40 s").
      return Math.round(Math.min(this.opts.maxIntervalMs, Math.max(this.opts.minIntervalMs, elapsedMs > 0 ? elapsedMs : 1000)));
    }
    const { mu, sigma } = this.latency.predict(capability, hintMs);
    const done = elapsedMs > 0 ? normalCdf((Math.log(elapsedMs) - mu) / sigma) : 0;
    const target = Math.min(0.999, done + this.thetaValue * (1 - done));
    const at = Math.exp(mu + sigma * probit(target));
    const d = at - elapsedMs;
    return Math.round(Math.min(this.opts.maxIntervalMs, Math.max(this.opts.minIntervalMs, d)));
  }
}
