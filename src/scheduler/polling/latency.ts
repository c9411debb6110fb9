import { clock } from '../../clock.js';
import { GridDist } from './empirical.js';
import { HintRegression } from './hintRegression.js';
import { LogEstimate } from './logEstimate.js';
import type { LogNormal } from './normal.js';

/**
 * Task latency, learned online per capability from the interval each task ended in:
 * after the last poll that saw it running, by the first that saw it finished.
 *
 * Most tasks are found done at their first poll, an interval (−∞, t]. Neither the
 * midpoint nor a one-step online EM copes with that: measured on W3's tasks (median 5 s,
 * σ 0.5), a one-step online EM settled at a 3 s median and σ 0.75, which put first polls
 * early and spent the run's calls. So both estimates (logEstimate.ts without a hint,
 * hintRegression.ts with one) keep the last WINDOW intervals (intervals.ts) and refit
 * by EM (maximum likelihood with a weak prior) every few tasks.
 *
 * The lognormal fits give a location (and the hint's worth); the shape is not assumed
 * beside each fit, the residuals ln(latency) − location of the same intervals
 * are kept as a histogram (empirical.ts), recent tasks weighing more, and the poller plans
 * on that. Where the data say nothing (below the first poll of tasks all found done there)
 * the histogram keeps the fitted lognormal's shape.
 */

export interface LatencyPriors {
  /** ln(latency / waitTime hint), when the service gives a hint. */
  readonly ratio: LogNormal;
  /** ln(latency in ms), when it does not. */
  readonly latency: LogNormal;
}

const DEFAULT_PRIORS: LatencyPriors = {
  ratio: { mu: 0, sigma: 0.4 },
  // The service's tasks take tens of seconds; the spread is wide until we have seen some.
  latency: { mu: Math.log(20_000), sigma: 0.8 },
};

/** How long learnedMs's answer is kept. */
const LEARNED_EVERY_MS = 5_000;

/** Task latency learned online per capability, from the interval each task ended in. */
export class LatencyModel {
  private learned = { at: Number.NEGATIVE_INFINITY, ms: null as number | null };
  private readonly withHint = new Map<string, HintRegression>();
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
    if (hintMs !== null && hintMs > 0) this.regression(capability).add(lo, hi, Math.log(hintMs));
    else this.base(capability).add(lo, hi);
  }

  /**
   * The predicted lognormal latency (ms) of a task of this capability with this hint.
   * Until hinted tasks have been seen, the hint is read through the prior ratio and
   * combined with the capability's usual latency: a task hinted far from the usual is
   * probably less unusual than its hint says.
   */
  predict(capability: string, hintMs: number | null): LogNormal {
    const hinted = hintMs !== null && hintMs > 0;
    const r = this.withHint.get(capability);
    if (hinted && r && r.samples > 0) return r.predict(Math.log(hintMs));
    const base = this.usual(capability);
    if (!hinted) return base;
    const pBase = 1 / base.sigma ** 2;
    const pHint = 1 / this.priors.ratio.sigma ** 2;
    return {
      mu: (base.mu * pBase + (Math.log(hintMs) + this.priors.ratio.mu) * pHint) / (pBase + pHint),
      sigma: 1 / Math.sqrt(pBase + pHint),
    };
  }

  /**
   * What the poller plans on: latency = scaleMs × X, X from `dist` (shape-free once tasks of
   * the kind have been seen; before, the lognormal `predict` gives, on the same grid).
   */
  predictive(capability: string, hintMs: number | null): { scaleMs: number; dist: GridDist } {
    const hinted = hintMs !== null && hintMs > 0;
    if (hinted) {
      const r = this.withHint.get(capability);
      if (r && r.samples > 0) return { scaleMs: Math.exp(r.location(Math.log(hintMs))), dist: r.resid };
    } else {
      const b = this.without.get(capability);
      if (b && b.samples > 0) return { scaleMs: Math.exp(b.location), dist: b.resid };
    }
    const p = this.predict(capability, hintMs);
    return { scaleMs: Math.exp(p.mu), dist: normalOnGrid(p.sigma) };
  }

  /**
   * The capability's tasks as the price of a poll sees them: hinted as its tasks usually
   * are, at eight quantiles of the recent hints — a bimodal service's hints are bimodal
   * too, and its typical (median) task says nothing of the slow ones' lags.
   */
  typical(capability: string): { scaleMs: number; dist: GridDist }[] {
    const r = this.withHint.get(capability);
    const b = this.without.get(capability);
    if (r && r.samples > (b?.samples ?? 0)) return r.hintQuantiles(8).map((h) => this.predictive(capability, Math.exp(h)));
    return [this.predictive(capability, null)];
  }

  /** Expected latency (ms) of a task of this capability, for ETAs and the plan. */
  meanMs(capability: string): number {
    const p = this.usual(capability);
    return Math.exp(p.mu + (p.sigma * p.sigma) / 2);
  }

  /** Tasks of this capability seen finished. */
  samples(capability: string): number {
    return (this.without.get(capability)?.samples ?? 0) + (this.withHint.get(capability)?.samples ?? 0);
  }

  /**
   * The task latency learned so far (the shortest step's): this model's once it has seen
   * tasks end, else `recent` (the ledger's recent tasks: a resumed run), else null. Read at
   * each pick while slots are guessed busy, by every lane: worked out again at most every 5 s.
   */
  learnedMs(steps: readonly { readonly capability: string }[], recent: () => number | null): number | null {
    const t = clock.now();
    if (t < this.learned.at || t - this.learned.at >= LEARNED_EVERY_MS) {
      const seen = steps.filter((s) => this.samples(s.capability) > 0);
      this.learned = { at: t, ms: seen.length > 0 ? Math.min(...seen.map((s) => this.meanMs(s.capability))) : recent() };
    }
    return this.learned.ms;
  }

  /** The capability's usual latency: from whichever kind of task has been seen more. */
  private usual(capability: string): LogNormal {
    const r = this.withHint.get(capability);
    const b = this.without.get(capability);
    if (r && r.samples > (b?.samples ?? 0)) return r.marginal();
    return (b ?? this.base(capability)).value;
  }

  private base(capability: string): LogEstimate {
    let e = this.without.get(capability);
    if (!e) this.without.set(capability, (e = new LogEstimate(this.priors.latency)));
    return e;
  }

  private regression(capability: string): HintRegression {
    let e = this.withHint.get(capability);
    if (!e) this.withHint.set(capability, (e = new HintRegression({ mu: this.priors.ratio.mu, sigma: this.priors.ratio.sigma })));
    return e;
  }
}

/** Lognormals on the residual grid, by σ to 0.01: the shape before data. */
const normals = new Map<number, GridDist>();
function normalOnGrid(sigma: number): GridDist {
  const key = Math.round(Math.min(3, Math.max(0.02, sigma)) * 100);
  let d = normals.get(key);
  if (!d) normals.set(key, (d = GridDist.normal(key / 100)));
  return d;
}
