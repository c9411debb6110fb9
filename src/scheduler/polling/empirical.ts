import { normalCdf } from './normal.js';
import { solveOnGrid, type PollTable } from './schedule.js';

/**
 * A latency distribution that assumes no shape: a histogram of the residual
 * r = ln(latency) − c, where c is a location the caller fits (the capability's usual log
 * latency, or α + β·ln(hint)). Uniform, bimodal, heavy-tailed services all fit it; a
 * lognormal is the special case of a normal residual.
 *
 * The data are intervals — a task ended after the last poll that saw it running and by the
 * first that saw it finished — so the histogram is the censored-data maximum likelihood
 * (Turnbull's self-consistency EM): each interval's weight is spread over the bins it
 * covers in proportion to the current estimate, and the estimate is the sum. A few
 * pseudo-tasks of a prior shape keep the bins no interval has reached (below the first poll
 * of tasks all found done there) where the prior put them, and a light smoothing keeps the
 * estimate from collapsing onto interval ends. Recent intervals weigh more (a half-life in
 * tasks), so a service that slows down over a night is followed.
 *
 * On r in [R_MIN, R_MAX] with bins of BIN (2.5% of the latency): fine beside lags of a
 * tenth of a task, coarse enough that the poll schedule (schedule.ts' recursion on this
 * grid) is solved in well under a millisecond.
 */
const R_MIN = -4;
const R_MAX = 4;
const BIN = 0.025;
const BINS = Math.round((R_MAX - R_MIN) / BIN);
const EM_ITERATIONS = 25;

/** A distribution on the residual grid, with what the poll schedule needs of it. */
export class GridDist {
  /** Mass per bin. */
  readonly p: Float64Array;
  /** Bumped at each refit: poll tables solved for an older version are stale. */
  version = 0;
  private grid: { x: Float64Array; F: Float64Array; PE: Float64Array; mean: number } | undefined;
  private readonly tables = new Map<number, PollTable>();

  constructor(p: Float64Array) {
    this.p = p;
  }

  static normal(sigma: number): GridDist {
    const p = new Float64Array(BINS);
    const s = Math.max(0.02, sigma);
    for (let k = 0; k < BINS; k++) p[k] = normalCdf((R_MIN + (k + 1) * BIN) / s) - normalCdf((R_MIN + k * BIN) / s);
    normalise(p);
    return new GridDist(p);
  }

  replace(p: Float64Array): void {
    this.p.set(p);
    this.version++;
    this.grid = undefined;
    this.tables.clear();
  }

  /** E[e^r]: the mean latency in units of e^c. */
  get mean(): number {
    return this.ensureGrid().mean;
  }

  /** P(e^r ≤ x). */
  cdf(x: number): number {
    const r = Math.log(x);
    if (!(r > R_MIN)) return 0;
    if (r >= R_MAX) return 1;
    const pos = (r - R_MIN) / BIN;
    const k = Math.floor(pos);
    let s = 0;
    for (let j = 0; j < k; j++) s += this.p[j]!;
    return s + this.p[k]! * (pos - k);
  }

  /** The optimal poll schedule for a price λ in units of e^c (cached by ln λ to 0.05). */
  table(priceRel: number): PollTable {
    const key = Math.round(Math.log(Math.max(1e-6, priceRel)) * 20);
    let t = this.tables.get(key);
    if (!t) {
      if (this.tables.size > 256) this.tables.clear();
      const { x, F, PE } = this.ensureGrid();
      t = solveOnGrid(x, F, PE, Math.exp(key / 20));
      this.tables.set(key, t);
    }
    return t;
  }

  private ensureGrid(): { x: Float64Array; F: Float64Array; PE: Float64Array; mean: number } {
    if (this.grid) return this.grid;
    // x[0] = 0 is acceptance; x[i] the upper edge of bin i − 1, trimmed to where the mass is.
    let first = 0;
    while (first < BINS - 1 && this.p[first]! < 1e-7) first++;
    let last = BINS - 1;
    while (last > first && this.p[last]! < 1e-7) last--;
    const n = last - first + 3;
    const x = new Float64Array(n);
    const F = new Float64Array(n);
    const PE = new Float64Array(n);
    x[1] = Math.exp(R_MIN + first * BIN);
    let f = 0;
    let pe = 0;
    for (let k = first; k <= last; k++) {
      f += this.p[k]!;
      pe += this.p[k]! * Math.exp(R_MIN + (k + 0.5) * BIN);
      const i = k - first + 2;
      x[i] = Math.exp(R_MIN + (k + 1) * BIN);
      F[i] = f;
      PE[i] = pe;
    }
    // What the trim dropped is counted as ending at the grid's ends.
    F[n - 1] = 1;
    this.grid = { x, F, PE, mean: pe / Math.max(1e-12, f) };
    return this.grid;
  }
}

function normalise(p: Float64Array): void {
  let s = 0;
  for (let k = 0; k < p.length; k++) s += p[k]!;
  if (s > 0) for (let k = 0; k < p.length; k++) p[k]! /= s;
}

/**
 * Fit `into` from residual intervals (lo, hi] with weights, by the EM above, starting from
 * `prior`: the shape before data, worth `priorWeight` tasks.
 */
export function fitResiduals(
  into: GridDist,
  lo: ArrayLike<number>,
  hi: ArrayLike<number>,
  w: ArrayLike<number>,
  m: number,
  prior: GridDist,
  priorWeight: number,
): void {
  const a = new Int32Array(m);
  const b = new Int32Array(m);
  let total = priorWeight;
  for (let i = 0; i < m; i++) {
    const l = lo[i]!;
    const h = hi[i]!;
    // Bins whose centre lies in (l, h]; an interval inside one bin takes that bin.
    let ai = Number.isFinite(l) ? Math.ceil((l - R_MIN) / BIN - 0.5) : 0;
    let bi = Math.floor((h - R_MIN) / BIN - 0.5) + 1;
    ai = Math.max(0, Math.min(BINS - 1, ai));
    bi = Math.max(1, Math.min(BINS, bi));
    if (bi <= ai) {
      ai = Math.max(0, Math.min(BINS - 1, Math.floor((h - R_MIN) / BIN)));
      bi = ai + 1;
    }
    a[i] = ai;
    b[i] = bi;
    total += w[i]!;
  }
  // From the prior each time, not from the last estimate: where no interval reaches, the
  // smoothing would otherwise widen the tails a little at every refit, without end.
  const p = new Float64Array(prior.p);
  const cum = new Float64Array(BINS + 1);
  const diff = new Float64Array(BINS + 1);
  const next = new Float64Array(BINS);
  for (let it = 0; it < EM_ITERATIONS; it++) {
    for (let k = 0; k < BINS; k++) cum[k + 1] = cum[k]! + p[k]!;
    diff.fill(0);
    for (let i = 0; i < m; i++) {
      const s = cum[b[i]!]! - cum[a[i]!]!;
      const f = w[i]! / Math.max(1e-12, s);
      diff[a[i]!]! += f;
      diff[b[i]!]! -= f;
    }
    let run = 0;
    for (let k = 0; k < BINS; k++) {
      run += diff[k]!;
      next[k] = (priorWeight * prior.p[k]! + p[k]! * run) / total;
    }
    // Smooth by [1 2 1]/4 (mass kept at the ends), and a floor so no bin is ever impossible.
    for (let k = 0; k < BINS; k++) {
      const l = next[k - 1] ?? next[k]!;
      const r = next[k + 1] ?? next[k]!;
      p[k] = 0.25 * l + 0.5 * next[k]! + 0.25 * r + 1e-9;
    }
    normalise(p);
  }
  into.replace(p);
}
