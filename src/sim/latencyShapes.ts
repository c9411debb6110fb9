/**
 * Task latency shapes beyond the lognormal: a bench that can disagree with the
 * scheduler's model needs a service whose latency is not the shape the model assumes.
 *
 * Every shape takes exactly two uniforms from the task stream, as the lognormal always did
 * (one Box–Muller normal): the outcome and hint draws that follow stay where they were, so
 * every seeded workload of before draws the very same tasks.
 */
import type { Rng } from './random.js';

/** Lognormal: median e^μ, σ of ln(latency). The `kind` may be left out (the older form). */
export interface LognormalShape {
  readonly kind?: 'lognormal';
  readonly medianMs: number;
  readonly sigma: number;
}

export interface UniformShape {
  readonly kind: 'uniform';
  readonly minMs: number;
  readonly maxMs: number;
}

/** Two uniform humps: `slowShare` of tasks in `slow`, the rest in `fast`. */
export interface BimodalShape {
  readonly kind: 'bimodal';
  readonly fast: { readonly minMs: number; readonly maxMs: number };
  readonly slow: { readonly minMs: number; readonly maxMs: number };
  readonly slowShare: number;
}

/**
 * A lognormal whose median moves linearly from `fromMedianMs` to `toMedianMs` over `overMs`
 * from the service's first task, then stays: a night in which the service slows down.
 */
export interface DriftShape {
  readonly kind: 'drift';
  readonly fromMedianMs: number;
  readonly toMedianMs: number;
  readonly overMs: number;
  readonly sigma: number;
}

export type LatencyShape = LognormalShape | UniformShape | BimodalShape | DriftShape;

export function isLatencyShape(v: object): v is LatencyShape {
  return 'medianMs' in v || 'kind' in v;
}

/** Checks a shape's numbers; throws naming the capability. */
export function checkShape(s: LatencyShape, what: string): void {
  const pos = (x: number) => Number.isFinite(x) && x > 0;
  const range = (r: { minMs: number; maxMs: number }) => pos(r.minMs) && r.maxMs >= r.minMs;
  let ok: boolean;
  switch (s.kind) {
    case undefined:
    case 'lognormal':
      ok = pos(s.medianMs) && s.sigma >= 0;
      break;
    case 'uniform':
      ok = range(s);
      break;
    case 'bimodal':
      ok = range(s.fast) && range(s.slow) && s.slowShare >= 0 && s.slowShare <= 1;
      break;
    case 'drift':
      ok = pos(s.fromMedianMs) && pos(s.toMedianMs) && pos(s.overMs) && s.sigma >= 0;
      break;
  }
  if (!ok) throw new Error(`sim: latency of ${what} is not a valid ${s.kind ?? 'lognormal'} shape`);
}

/** One task's latency (ms, ≥ 1), `sinceStartMs` after the service's first task. Two uniforms, always. */
export function drawLatency(rng: Rng, s: LatencyShape, sinceStartMs: number): number {
  let ms: number;
  switch (s.kind) {
    case undefined:
    case 'lognormal':
      ms = rng.lognormal(s.medianMs, s.sigma);
      break;
    case 'uniform': {
      const u = rng.uniform();
      rng.uniform();
      ms = s.minMs + u * (s.maxMs - s.minMs);
      break;
    }
    case 'bimodal': {
      const r = rng.uniform() < s.slowShare ? s.slow : s.fast;
      ms = r.minMs + rng.uniform() * (r.maxMs - r.minMs);
      break;
    }
    case 'drift':
      ms = rng.lognormal(driftMedianMs(s, sinceStartMs), s.sigma);
      break;
  }
  return Math.max(1, Math.round(ms));
}

export function driftMedianMs(s: DriftShape, sinceStartMs: number): number {
  const f = Math.min(1, Math.max(0, sinceStartMs / s.overMs));
  return s.fromMedianMs + f * (s.toMedianMs - s.fromMedianMs);
}

/** Mean latency (ms); for a drift, the mean over its whole ramp (a run's own mix depends on its timing). */
export function meanLatencyMs(s: LatencyShape): number {
  switch (s.kind) {
    case undefined:
    case 'lognormal':
      return s.medianMs * Math.exp((s.sigma * s.sigma) / 2);
    case 'uniform':
      return (s.minMs + s.maxMs) / 2;
    case 'bimodal':
      return (1 - s.slowShare) * ((s.fast.minMs + s.fast.maxMs) / 2) + s.slowShare * ((s.slow.minMs + s.slow.maxMs) / 2);
    case 'drift':
      return ((s.fromMedianMs + s.toMedianMs) / 2) * Math.exp((s.sigma * s.sigma) / 2);
  }
}

/** One line for tables: "uniform 6–18 s", "lognormal 8 s σ1". */
export function describeShape(s: LatencyShape): string {
  const sec = (ms: number) => `${+(ms / 1000).toFixed(1)}`;
  switch (s.kind) {
    case undefined:
    case 'lognormal':
      return `lognormal ${sec(s.medianMs)} s σ${s.sigma}`;
    case 'uniform':
      return `uniform ${sec(s.minMs)}–${sec(s.maxMs)} s`;
    case 'bimodal':
      return `bimodal ${Math.round((1 - s.slowShare) * 100)}% ${sec(s.fast.minMs)}–${sec(s.fast.maxMs)} s, ${Math.round(s.slowShare * 100)}% ${sec(s.slow.minMs)}–${sec(s.slow.maxMs)} s`;
    case 'drift':
      return `drift ${sec(s.fromMedianMs)}→${sec(s.toMedianMs)} s σ${s.sigma}`;
  }
}
