import { fitResiduals, GridDist } from './empirical.js';
import { normalCdf } from './normal.js';

/**
 * Task latency, learned online per capability from the interval each task ended in:
 * after the last poll that saw it running, by the first that saw it finished.
 *
 * Most tasks are found done at their first poll, an interval (−∞, t]. Neither the
 * midpoint nor a one-step online EM copes with that: measured on W3's tasks (median 5 s,
 * σ 0.5), a one-step online EM settled at a 3 s median and σ 0.75, which put first polls
 * early and spent the run's calls. So both estimates below keep the last WINDOW
 * intervals and refit by EM (maximum likelihood with a weak prior) every few tasks.
 *
 * The lognormal fits give a location (and the hint's worth); the shape is not assumed
 * (issue 16): beside each fit, the residuals ln(latency) − location of the same intervals
 * are kept as a histogram (empirical.ts), recent tasks weighing more, and the poller plans
 * on that. Where the data say nothing (below the first poll of tasks all found done there)
 * the histogram keeps the fitted lognormal's shape.
 */

export interface LogNormal {
  /** Mean of ln(x). */
  readonly mu: number;
  /** Standard deviation of ln(x). */
  readonly sigma: number;
}

const normalPdf = (z: number): number => Math.exp(-0.5 * z * z) / Math.sqrt(2 * Math.PI);

/** Intervals an estimate keeps: recent enough to follow drift, enough to be steady. */
const WINDOW = 400;
/** Refit after this many new intervals (after every one while there are few). */
const REFIT_EVERY = 8;
const EM_ITERATIONS = 12;
/** Pseudo-observations of each prior. */
const PRIOR_WEIGHT = 4;
/** A spread below this would make the poller trust one number too much. */
const MIN_SIGMA = 0.05;

/** E[x] and E[x²] of x ~ N(mu, sigma²) given lo < x ≤ hi. */
function truncatedMoments(lo: number, hi: number, mu: number, sigma: number): { ex: number; ex2: number } {
  const a = (lo - mu) / sigma;
  const b = (hi - mu) / sigma;
  const finiteA = Number.isFinite(a);
  const z = normalCdf(b) - (finiteA ? normalCdf(a) : 0);
  if (z > 1e-9) {
    const pa = finiteA ? normalPdf(a) : 0;
    const pb = normalPdf(b);
    const apa = finiteA ? a * pa : 0;
    const ex = mu + (sigma * (pa - pb)) / z;
    // E[(x − mu)²] = σ²(1 + (aφ(a) − bφ(b))/Z)
    const ex2 = sigma * sigma * (1 + (apa - b * pb) / z) + 2 * mu * ex - mu * mu;
    return { ex, ex2 };
  }
  // Far outside what we believe: take the interval's end as a plain sample.
  const ex = finiteA ? (lo + hi) / 2 : hi;
  return { ex, ex2: ex * ex };
}

/** Intervals of ln(latency), each with the ln(hint) it came with (0 without). */
class Intervals {
  readonly lo = new Float64Array(WINDOW);
  readonly hi = new Float64Array(WINDOW);
  readonly h = new Float64Array(WINDOW);
  total = 0;
  private sinceFit = 0;

  add(lo: number, hi: number, h: number): boolean {
    const k = this.total % WINDOW;
    this.lo[k] = lo;
    this.hi[k] = hi;
    this.h[k] = h;
    this.total++;
    this.sinceFit++;
    if (this.total > 2 * REFIT_EVERY && this.sinceFit < REFIT_EVERY) return false;
    this.sinceFit = 0;
    return true;
  }

  get size(): number {
    return Math.min(this.total, WINDOW);
  }

  /** Each kept interval's weight: halved every HALF_LIFE tasks since, so a drift is followed. */
  weights(): Float64Array {
    const m = this.size;
    const w = new Float64Array(m);
    const newest = (this.total - 1) % WINDOW;
    for (let k = 0; k < m; k++) w[k] = Math.pow(0.5, ((newest - k + WINDOW) % WINDOW) / HALF_LIFE);
    return w;
  }
}

/** Tasks over which an interval's weight in the residual histogram halves. */
const HALF_LIFE = 400;
/** Pseudo-tasks of the fitted lognormal's shape in the residual histogram. */
const RESIDUAL_PRIOR_WEIGHT = 30;

/** The histogram of the residuals (lo − c_i, hi − c_i] of `d`, refitted in `into`. */
function refitResiduals(into: GridDist, d: Intervals, loc: (i: number) => number, sigma: number): void {
  const m = d.size;
  const lo = new Float64Array(m);
  const hi = new Float64Array(m);
  for (let i = 0; i < m; i++) {
    const c = loc(i);
    lo[i] = d.lo[i]! - c;
    hi[i] = d.hi[i]! - c;
  }
  fitResiduals(into, lo, hi, d.weights(), m, GridDist.normal(sigma), RESIDUAL_PRIOR_WEIGHT);
}

/** ln(latency) ~ N(mu, σ²), for tasks without a hint. */
class LogEstimate {
  private readonly data = new Intervals();
  private mean: number;
  private variance: number;
  /** ln(latency) − mean, shape-free. */
  readonly resid: GridDist;

  constructor(private readonly prior: LogNormal) {
    this.mean = prior.mu;
    this.variance = prior.sigma ** 2;
    this.resid = GridDist.normal(prior.sigma);
  }

  add(lo: number, hi: number): void {
    if (this.data.add(lo, hi, 0)) {
      this.refit();
      refitResiduals(this.resid, this.data, () => this.mean, this.value.sigma);
    }
  }

  get location(): number {
    return this.mean;
  }

  private refit(): void {
    const { lo, hi } = this.data;
    const m = this.data.size;
    const { mu: mu0, sigma: s0 } = this.prior;
    for (let it = 0; it < EM_ITERATIONS; it++) {
      const mu = this.mean;
      const sigma = Math.sqrt(this.variance);
      let sx = PRIOR_WEIGHT * mu0;
      let sxx = PRIOR_WEIGHT * (s0 * s0 + mu0 * mu0);
      for (let i = 0; i < m; i++) {
        const t = truncatedMoments(lo[i]!, hi[i]!, mu, sigma);
        sx += t.ex;
        sxx += t.ex2;
      }
      const w = m + PRIOR_WEIGHT;
      this.mean = sx / w;
      this.variance = Math.max(1e-4, sxx / w - this.mean * this.mean);
      if (Math.abs(this.mean - mu) + Math.abs(Math.sqrt(this.variance) - sigma) < 1e-4) break;
    }
  }

  get samples(): number {
    return this.data.total;
  }

  get value(): LogNormal {
    return { mu: this.mean, sigma: Math.max(MIN_SIGMA, Math.sqrt(this.variance)) };
  }
}

/**
 * ln(latency) given ln(hint) h: N(α + β·h, τ²), a censored linear regression. The hint
 * is a noisy measurement of the latency, so the best prediction shrinks it towards the
 * usual latency (β < 1): with W1's figures (spread 0.5 of latencies, 0.3 of the hint's
 * error) β is 0.74 and τ 0.26. The hints themselves are seen exactly, so they also give
 * the capability's usual latency without the censoring that blurs LogEstimate.
 */
class HintRegression {
  private readonly data = new Intervals();
  private alpha: number;
  private beta = 1;
  private variance: number;
  private hMean = 0;
  private hVar = 0;

  /** ln(latency) − (α + β·ln hint), shape-free. */
  readonly resid: GridDist;

  constructor(private readonly prior: LogNormal) {
    this.alpha = prior.mu;
    this.variance = prior.sigma ** 2;
    this.resid = GridDist.normal(prior.sigma);
  }

  add(lo: number, hi: number, h: number): void {
    if (this.data.add(lo, hi, h)) {
      this.refit();
      refitResiduals(this.resid, this.data, (i) => this.alpha + this.beta * this.data.h[i]!, Math.sqrt(this.variance));
    }
  }

  /** ln of the latency a hint h (ln ms) predicts, before the residual. */
  location(h: number): number {
    return this.alpha + this.beta * h;
  }

  /** `k` quantiles (ln ms) of the hints kept, at (i + ½)/k. */
  hintQuantiles(k: number): number[] {
    const m = this.data.size;
    const sorted = Array.from(this.data.h.subarray(0, m)).sort((a, b) => a - b);
    return Array.from({ length: k }, (_, i) => sorted[Math.min(m - 1, Math.floor(((i + 0.5) / k) * m))]!);
  }

  private refit(): void {
    const { lo, hi, h } = this.data;
    const m = this.data.size;
    let hs = 0;
    for (let i = 0; i < m; i++) hs += h[i]!;
    const hBar = hs / m;
    let dd = 0;
    for (let i = 0; i < m; i++) dd += (h[i]! - hBar) ** 2;
    this.hMean = hBar;
    this.hVar = dd / m;
    // The prior on β (1: take the hint at its word) weighs as PRIOR_WEIGHT hints spread 0.5.
    const kBeta = PRIOR_WEIGHT * 0.25;
    const s0 = this.prior.sigma;
    const ex = new Float64Array(m);
    const ex2 = new Float64Array(m);
    for (let it = 0; it < EM_ITERATIONS; it++) {
      const tau = Math.sqrt(this.variance);
      const a0 = this.alpha;
      const b0 = this.beta;
      let sy = 0;
      for (let i = 0; i < m; i++) {
        const t = truncatedMoments(lo[i]!, hi[i]!, a0 + b0 * h[i]!, tau);
        ex[i] = t.ex;
        ex2[i] = t.ex2;
        sy += t.ex;
      }
      const yBar = sy / m;
      let sdy = 0;
      for (let i = 0; i < m; i++) sdy += (h[i]! - hBar) * (ex[i]! - yBar);
      const beta = (sdy + kBeta) / (dd + kBeta);
      const alpha = yBar - beta * hBar;
      let ss = PRIOR_WEIGHT * s0 * s0;
      for (let i = 0; i < m; i++) {
        const c = alpha + beta * h[i]!;
        ss += ex2[i]! - 2 * c * ex[i]! + c * c;
      }
      this.alpha = alpha;
      this.beta = beta;
      this.variance = Math.max(1e-4, ss / (m + PRIOR_WEIGHT));
      if (Math.abs(alpha - a0) + Math.abs(beta - b0) + Math.abs(Math.sqrt(this.variance) - tau) < 1e-4) break;
    }
  }

  get samples(): number {
    return this.data.total;
  }

  /** Only once fitted: before, the caller combines its priors. */
  predict(h: number): LogNormal {
    return { mu: this.alpha + this.beta * h, sigma: Math.max(MIN_SIGMA, Math.sqrt(this.variance)) };
  }

  /** The usual latency of hinted tasks: the regression over the hints seen. */
  marginal(): LogNormal {
    const s2 = this.beta * this.beta * this.hVar + this.variance;
    return { mu: this.alpha + this.beta * this.hMean, sigma: Math.max(MIN_SIGMA, Math.sqrt(s2)) };
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
