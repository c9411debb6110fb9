import { GridDist } from './empirical.js';
import { EM_ITERATIONS, Intervals, MIN_SIGMA, PRIOR_WEIGHT, refitResiduals } from './intervals.js';
import { truncatedMoments, type LogNormal } from './normal.js';

/**
 * ln(latency) given ln(hint) h: N(α + β·h, τ²), a censored linear regression. The hint
 * is a noisy measurement of the latency, so the best prediction shrinks it towards the
 * usual latency (β < 1): with W1's figures (spread 0.5 of latencies, 0.3 of the hint's
 * error) β is 0.74 and τ 0.26. The hints themselves are seen exactly, so they also give
 * the capability's usual latency without the censoring that blurs LogEstimate.
 */
export class HintRegression {
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
