/*
 * T*, the shortest possible run of a workload (docs/ARCHITECTURE.md § Performance
 * model), computed per key and taken as the largest of three bounds:
 *
 *   calls   C = n·(u + Σ_s 2·a_s)            a_s = 1 / (1 − FAIL rate of step s)
 *           T_hour = (⌈C ÷ callsPerHour⌉ − 1) h    T_min = C ÷ callsPerMinute min
 *   slots   T_slots = n·Σ_s a_s·E[latency_s] ÷ activeTasks,  E[lognormal] = median·e^{σ²/2}
 *
 * n is the photos of the busiest key (photos split evenly across keys). ERROR ends a photo
 * after one attempt, so only FAIL adds attempts; the formula ignores that an ERROR in an
 * early step saves the later steps' calls, which keeps T* a (slightly loose) lower bound.
 */

import { estimate, expectedAttempts, type Bound } from '../src/progress/model.js';

export interface StepModel {
  /** Median task latency, ms (lognormal). */
  readonly medianMs: number;
  /** σ of the underlying normal. */
  readonly sigma: number;
  /** Probability that a task ends FAIL (and is created again). */
  readonly failRate: number;
}

export interface TStarInput {
  readonly photos: number;
  readonly keys: number;
  readonly steps: readonly StepModel[];
  /** true when each photo needs an upload call (file inputs). */
  readonly uploads: boolean;
  readonly limits?: { readonly callsPerMinute: number; readonly callsPerHour: number; readonly activeTasks: number };
}

export type { Bound };

export interface TStar {
  /** Photos of the busiest key. */
  readonly photosPerKey: number;
  /** C, the fewest calls one key must spend. */
  readonly calls: number;
  readonly hourMs: number;
  readonly minuteMs: number;
  readonly slotsMs: number;
  readonly ms: number;
  readonly binds: Bound;
}

const DEFAULT_LIMITS = { callsPerMinute: 100, callsPerHour: 1000, activeTasks: 3 } as const;

/** Expected attempts of a step whose tasks FAIL with probability p (each FAIL is created again). */
export const attempts = expectedAttempts;

/** Mean of a lognormal with the given median and σ. */
export function lognormalMean(median: number, sigma: number): number {
  return median * Math.exp((sigma * sigma) / 2);
}

/** The busiest key's share, through the same model `darkroom plan` and the live display use. */
export function tStar(w: TStarInput): TStar {
  if (!(w.keys >= 1)) throw new RangeError(`keys must be at least 1, got ${w.keys}`);
  const n = Math.ceil(w.photos / w.keys);
  const u = w.uploads ? 1 : 0;
  const calls = n * (u + w.steps.reduce((sum, s) => sum + 2 * attempts(s.failRate), 0));
  const taskMs = n * w.steps.reduce((sum, s) => sum + attempts(s.failRate) * lognormalMean(s.medianMs, s.sigma), 0);
  const e = estimate({ keys: 1, limits: w.limits ?? DEFAULT_LIMITS, calls, taskMs });
  return { photosPerKey: n, calls, hourMs: e.hourMs, minuteMs: e.minuteMs, slotsMs: e.slotsMs, ms: e.ms, binds: e.binds };
}
