/**
 * The benchmark's workloads (issue 3): what the photos are, how the simulated service
 * behaves, and the T* each one allows.
 */
import type { Capability } from '../src/spec/capabilities.js';
import type { SimOptions } from '../src/sim/options.js';
import { tStar, type TStar } from './tstar.js';

export interface Workload {
  readonly name: string;
  readonly photos: number;
  readonly keys: number;
  readonly steps: readonly Capability[];
  /** Lognormal latency of every step. */
  readonly latency: { readonly medianMs: number; readonly sigma: number };
  readonly outcomes: { readonly fail: number; readonly error: number };
  /** The create response's waitTime: true latency × lognormal noise, or 0. */
  readonly waitTimeHint: NonNullable<SimOptions['waitTimeHint']>;
  /** Photos in the `--quick` variant: small enough for a short run, same resource binding. */
  readonly quickPhotos: number;
}

const HINT = { noiseSigma: 0.3 } as const;
const W1_SHAPE = {
  steps: ['enhance'],
  latency: { medianMs: 20_000, sigma: 0.5 },
  outcomes: { fail: 0.02, error: 0.01 },
  waitTimeHint: HINT,
} as const;

// quickPhotos: W1 at 1,000 is still hour-bound (3 h vs 2.1 h of slots), W2 at 200 still
// slot-bound, W3 is small enough to run whole, W4 at 5,000 (1,000 a key) still hour-bound.
export const WORKLOADS: readonly Workload[] = [
  { name: 'W1', photos: 10_000, keys: 1, ...W1_SHAPE, quickPhotos: 1_000 },
  {
    name: 'W2',
    photos: 2_000,
    keys: 1,
    steps: ['restore', 'colorize', 'upscale'],
    latency: { medianMs: 40_000, sigma: 0.5 },
    outcomes: { fail: 0.01, error: 0 },
    waitTimeHint: 'none',
    quickPhotos: 200,
  },
  {
    name: 'W3',
    photos: 300,
    keys: 1,
    steps: ['enhance'],
    latency: { medianMs: 5_000, sigma: 0.5 },
    outcomes: { fail: 0, error: 0 },
    waitTimeHint: HINT,
    quickPhotos: 300,
  },
  { name: 'W4', photos: 10_000, keys: 5, ...W1_SHAPE, quickPhotos: 5_000 },
];

export function workloadByName(name: string): Workload {
  const w = WORKLOADS.find((x) => x.name.toLowerCase() === name.toLowerCase());
  if (!w) throw new Error(`unknown workload ${JSON.stringify(name)}; expected one of ${WORKLOADS.map((x) => x.name).join(', ')}`);
  return w;
}

/** The same workload with `photos` photos (at least one a key). */
export function withPhotos(w: Workload, photos: number): Workload {
  return { ...w, photos: Math.max(w.keys, Math.round(photos)) };
}

/** The `--quick` variant, or `--scale f` of the full one. */
export function variant(w: Workload, opts: { quick?: boolean; scale?: number }): Workload {
  if (opts.quick) return withPhotos(w, w.quickPhotos);
  if (opts.scale !== undefined && opts.scale !== 1) return withPhotos(w, w.photos * opts.scale);
  return w;
}

/** The API keys of a workload: the variable each is read from, and its value. */
export function benchKeys(w: Workload): { env: string; key: string }[] {
  return Array.from({ length: w.keys }, (_, i) => ({ env: `DARKROOM_BENCH_KEY_${i + 1}`, key: `bench-key-${i + 1}-0123456789abcdef` }));
}

/** The simulated service of a workload; results are the inputs passed through, not processed. */
export function simOptionsFor(w: Workload, seed: number): SimOptions {
  return {
    seed,
    keys: benchKeys(w).map((k) => k.key),
    resultOrigin: 'http://results.invalid',
    processing: 'passthrough',
    latency: { ...w.latency },
    outcomes: { fail: w.outcomes.fail, error: w.outcomes.error },
    waitTimeHint: w.waitTimeHint,
  };
}

export function tStarOf(w: Workload): TStar {
  const step = { medianMs: w.latency.medianMs, sigma: w.latency.sigma, failRate: w.outcomes.fail };
  return tStar({ photos: w.photos, keys: w.keys, uploads: true, steps: w.steps.map(() => step) });
}
