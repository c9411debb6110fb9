import { GridDist } from './empirical.js';
import { EM_ITERATIONS, Intervals, MIN_SIGMA, PRIOR_WEIGHT, refitResiduals } from './intervals.js';
import { truncatedMoments, type LogNormal } from './normal.js';

/** ln(latency) ~ N(mu, σ²), for tasks without a hint. */
export class LogEstimate {
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
