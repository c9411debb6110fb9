import { fitResiduals, GridDist } from './empirical.js';

/**
 * The censored observations both latency estimates (logEstimate.ts, hintRegression.ts)
 * refit from: the last WINDOW intervals of ln(latency) each task ended in, and the
 * residual histogram fitted to them (latency.ts explains why intervals, and why refits).
 */

/** Intervals an estimate keeps: recent enough to follow drift, enough to be steady. */
const WINDOW = 400;
/** Refit after this many new intervals (after every one while there are few). */
const REFIT_EVERY = 8;
export const EM_ITERATIONS = 12;
/** Pseudo-observations of each prior. */
export const PRIOR_WEIGHT = 4;
/** A spread below this would make the poller trust one number too much. */
export const MIN_SIGMA = 0.05;
/** Tasks over which an interval's weight in the residual histogram halves. */
const HALF_LIFE = 400;
/** Pseudo-tasks of the fitted lognormal's shape in the residual histogram. */
const RESIDUAL_PRIOR_WEIGHT = 30;

/** Intervals of ln(latency), each with the ln(hint) it came with (0 without). */
export class Intervals {
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

/** The histogram of the residuals (lo − c_i, hi − c_i] of `d`, refitted in `into`. */
export function refitResiduals(into: GridDist, d: Intervals, loc: (i: number) => number, sigma: number): void {
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
