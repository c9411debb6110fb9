import { normalCdf } from './normal.js';

/**
 * The poll times that cost a task least, for a lognormal latency and a price per poll.
 *
 * A task holds a slot from acceptance until a poll sees it finished, so every poll after
 * the task ended costs the slot the time in between (the lag), and every poll is a call.
 * With a price λ for a call, in slot-milliseconds, the best schedule minimises
 * E[lag] + λ·E[polls]. Given that the last poll, at t, saw the task running, the cost
 * to go is
 *
 *     C(t) = min over t' > t of  λ + E[(t' − L)·1{L ≤ t'} | L > t] + P(L > t' | L > t)·C(t'),
 *
 * solved backwards on a grid. Lowering λ buys shorter lags with more polls; the lane sets
 * λ by which resource binds (PollPlanner). The table also says what a price buys —
 * expected polls and lag per task — which is how the lane turns "calls left in the hour"
 * into the lowest price it may pay. (A simpler rule, "poll where the task is done with
 * probability θ", comes within a few percent of these lags on lognormal latencies, but
 * says nothing exact about how many polls it will spend.)
 *
 * The lognormal is scale-free: in units of its median the schedule depends only on σ and
 * λ/median, so tables are cached on those two, rounded.
 */

export interface PollTable {
  readonly sigma: number;
  /** λ in units of the median. */
  readonly priceRel: number;
  /** Grid of times in units of the median; x[0] = 0 is acceptance. */
  readonly x: Float64Array;
  /** Index of the next poll from each grid point. */
  readonly next: Uint32Array;
  /** Expected polls from acceptance. */
  readonly polls: number;
  /** Expected lag from acceptance, in units of the median. */
  readonly lag: number;
}

/** Grid points per unit of ln x: 1% steps, fine beside lags of a tenth of the median. */
const STEPS_PER_LOG = 100;
/** The grid spans ±Z_SPAN σ around the median in ln x. */
const Z_SPAN = 4.3;

export function solvePollTable(sigma: number, priceRel: number): PollTable {
  const lo = -Z_SPAN * sigma;
  const hi = Z_SPAN * sigma;
  const n = 1 + Math.max(16, Math.ceil((hi - lo) * STEPS_PER_LOG));
  const x = new Float64Array(n);
  const F = new Float64Array(n);
  const PE = new Float64Array(n); // E[X·1{X ≤ x}]
  const meanX = Math.exp((sigma * sigma) / 2);
  for (let i = 1; i < n; i++) {
    const lx = lo + ((hi - lo) * (i - 1)) / (n - 2);
    x[i] = Math.exp(lx);
    F[i] = normalCdf(lx / sigma);
    PE[i] = meanX * normalCdf(lx / sigma - sigma);
  }
  return solveOnGrid(x, F, PE, priceRel, sigma);
}

/**
 * The same recursion for any latency distribution, given on a grid: x[0] = 0 (acceptance),
 * x increasing, F[i] = P(X ≤ x[i]) and PE[i] = E[X·1{X ≤ x[i]}], X in the grid's units and
 * λ (`priceRel`) in the same units. The lognormal above is one such grid; the learned,
 * shape-free distribution (empirical.ts) is another.
 */
export function solveOnGrid(x: Float64Array, F: Float64Array, PE: Float64Array, priceRel: number, sigma = Number.NaN): PollTable {
  const n = x.length;
  // D = S·C, P = S·E[polls], G = S·E[lag] (each "given L > x_i", times P(L > x_i)): the
  // products stay finite where S underflows.
  const D = new Float64Array(n);
  const P = new Float64Array(n);
  const G = new Float64Array(n);
  const next = new Uint32Array(n);
  const last = n - 1;
  D[last] = priceRel * (1 - F[last]!);
  P[last] = 1 - F[last]!;
  next[last] = last;
  // D[i] = λ·S_i + PE_i + min_j (A_j − x_j·F_i), with A_j = x_j·F_j − PE_j + D_j.
  const A = new Float64Array(n);
  A[last] = x[last]! * F[last]! - PE[last]! + D[last]!;
  for (let i = last - 1; i >= 0; i--) {
    const Fi = F[i]!;
    let best = Infinity;
    let bj = i + 1;
    for (let j = i + 1; j < n; j++) {
      const v = A[j]! - x[j]! * Fi;
      if (v < best) {
        best = v;
        bj = j;
      }
    }
    const Si = 1 - Fi;
    D[i] = priceRel * Si + PE[i]! + best;
    P[i] = Si + P[bj]!;
    G[i] = x[bj]! * (F[bj]! - Fi) - (PE[bj]! - PE[i]!) + G[bj]!;
    next[i] = bj;
    A[i] = x[i]! * Fi - PE[i]! + D[i]!;
  }
  return { sigma, priceRel, x, next, polls: P[0]!, lag: G[0]! };
}

/** The next poll, in units of the median, for a task last seen running at `at` (same units). */
export function nextPollAt(t: PollTable, at: number): number {
  const { x, next } = t;
  const n = x.length;
  if (!(at > 0)) return x[next[0]!]!;
  if (at >= x[n - 1]!) return Number.NaN; // past where the model puts any weight
  // the last grid point at or before `at`
  let lo = 0;
  let hi = n - 1;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (x[mid]! <= at) lo = mid;
    else hi = mid;
  }
  let j = next[lo]!;
  while (j < n - 1 && x[j]! <= at) j = next[j]!;
  return x[j]! > at ? x[j]! : Number.NaN;
}

/** Past the grid's end the model has no weight left: poll a quarter later each time. */
export const BEYOND_GRID_BACKOFF = 1.25;

/** Following the table, the polls a task of latency `at` (units of the median) takes, and when the last sees it done. */
export function pollsUntil(t: PollTable, latency: number): { polls: number; seenAt: number } {
  let at = 0;
  let polls = 0;
  do {
    const next = nextPollAt(t, at);
    at = Number.isNaN(next) ? at * BEYOND_GRID_BACKOFF : next;
    polls++;
  } while (at < latency);
  return { polls, seenAt: at };
}

/** Tables by rounded (σ, ln λ/median): λ moves continuously, the tables need not. */
export class PollTables {
  private readonly cache = new Map<string, PollTable>();

  constructor(private readonly maxEntries = 4096) {}

  get(sigma: number, priceRel: number): PollTable {
    const s = Math.round(Math.min(2, Math.max(0.05, sigma)) * 100) / 100;
    const lp = Math.round(Math.log(Math.max(1e-6, priceRel)) * 20) / 20;
    const key = `${s}|${lp}`;
    let t = this.cache.get(key);
    if (!t) {
      if (this.cache.size >= this.maxEntries) this.cache.delete(this.cache.keys().next().value!);
      t = solvePollTable(s, Math.exp(lp));
      this.cache.set(key, t);
    }
    return t;
  }

  /**
   * The smallest price (units of the median) whose schedule expects at most `polls` polls
   * a task: the cheapest lag the calls left can pay for.
   */
  priceFor(sigma: number, polls: number): number {
    let lo = Math.log(1e-4);
    let hi = Math.log(1e3);
    if (this.get(sigma, Math.exp(lo)).polls <= polls) return Math.exp(lo);
    for (let k = 0; k < 24 && hi - lo > 0.05; k++) {
      const mid = (lo + hi) / 2;
      if (this.get(sigma, Math.exp(mid)).polls <= polls) hi = mid;
      else lo = mid;
    }
    return Math.exp(hi);
  }
}
