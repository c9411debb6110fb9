/**
 * The simulator's knobs, their defaults, and a one-line banner for `darkroom sim`.
 */
import { CAPABILITY_NAMES, type Capability } from '../spec/capabilities.js';
import { resolveFaults, type FaultConfig, type FaultProfileName, type ResolvedFaults } from './faults.js';
import { checkShape, isLatencyShape, type LatencyShape } from './latencyShapes.js';
import { DEFAULT_STYLES } from './processing.js';

/** A task latency shape (latencyShapes.ts); `{ medianMs, sigma }` is the lognormal of before. */
export type LatencySpec = LatencyShape;

export interface SimOptions {
  /** Default 1. Same seed and same call sequence give the same answers. */
  seed?: number;
  /** Valid API keys; any other or missing key gets 401/-1. */
  keys: string[];
  /** Per key; default 100 / 1000 / 3. */
  limits?: { callsPerMinute?: number; callsPerHour?: number; activeTasks?: number };
  /** Service-wide; default 10000 / 50000. */
  global?: { callsPerMinute?: number; callsPerHour?: number };
  /** Task latency, for all capabilities or per capability; default lognormal, median 20000 ms, sigma 0.5 (other shapes: latencyShapes.ts). */
  latency?: LatencySpec | Partial<Record<Capability, LatencySpec>>;
  /** Probabilities of FAIL, ERROR, OTHER; the rest is SUCCESS. */
  outcomes?: { fail?: number; error?: number; other?: number };
  /**
   * waitTime = true latency × bias × lognormal(0, noiseSigma); 'none' answers 0. Default
   * noiseSigma 0.3, bias 1 (0.5: a service whose estimate is half the truth).
   */
  waitTimeHint?: { noiseSigma: number; bias?: number } | 'none';
  /** Account credits; default 1e9. */
  credits?: number;
  /** Default true; false answers creates with 24403. */
  subscribed?: boolean;
  /** Base of upload and result URLs, e.g. 'http://127.0.0.1:5678'. */
  resultOrigin: string;
  /** Styles image2image accepts; default sepia, noir, vivid, sketch. */
  styles?: string[];
  /**
   * 'sharp' (default) really processes results. 'passthrough' serves the input bytes
   * unchanged and at once: a long in-process simulation then neither spends CPU on pixels
   * nor lets thread-pool timing leak into virtual time.
   */
  processing?: 'sharp' | 'passthrough';
  /** Injected faults: a profile name or an explicit per-fault config (faults.ts). Default 'none'. */
  faults?: FaultProfileName | FaultConfig;
}

export interface ResolvedSimOptions {
  seed: number;
  keys: string[];
  limits: { callsPerMinute: number; callsPerHour: number; activeTasks: number };
  global: { callsPerMinute: number; callsPerHour: number };
  latency: Record<Capability, LatencySpec>;
  outcomes: { fail: number; error: number; other: number };
  waitTimeNoiseSigma: number | 'none';
  waitTimeBias: number;
  credits: number;
  subscribed: boolean;
  resultOrigin: string;
  styles: string[];
  processing: 'sharp' | 'passthrough';
  faults: ResolvedFaults;
}

const SIM_DEFAULTS = {
  seed: 1,
  limits: { callsPerMinute: 100, callsPerHour: 1000, activeTasks: 3 },
  global: { callsPerMinute: 10_000, callsPerHour: 50_000 },
  latency: { medianMs: 20_000, sigma: 0.5 },
  waitTimeNoiseSigma: 0.3,
  credits: 1e9,
} as const;

export function resolveSimOptions(opts: SimOptions): ResolvedSimOptions {
  if (!Array.isArray(opts.keys)) throw new Error('sim: keys must be an array of API keys');
  const origin = new URL(opts.resultOrigin); // throws on a malformed origin, early and loudly
  const outcomes = {
    fail: opts.outcomes?.fail ?? 0,
    error: opts.outcomes?.error ?? 0,
    other: opts.outcomes?.other ?? 0,
  };
  for (const [k, v] of Object.entries(outcomes)) {
    if (!(v >= 0 && v <= 1)) throw new Error(`sim: outcomes.${k} must be a probability`);
  }
  if (outcomes.fail + outcomes.error + outcomes.other > 1 + 1e-9) {
    throw new Error('sim: outcome probabilities add up to more than 1');
  }
  const latency = {} as Record<Capability, LatencySpec>;
  const given = opts.latency;
  for (const cap of CAPABILITY_NAMES) {
    const spec: LatencySpec | undefined =
      given === undefined ? undefined : isLatencyShape(given) ? given : (given as Partial<Record<Capability, LatencySpec>>)[cap];
    latency[cap] = spec ?? SIM_DEFAULTS.latency;
    checkShape(latency[cap], cap);
  }
  const hint = opts.waitTimeHint;
  return {
    seed: opts.seed ?? SIM_DEFAULTS.seed,
    keys: [...opts.keys],
    limits: { ...SIM_DEFAULTS.limits, ...definedOnly(opts.limits ?? {}) },
    global: { ...SIM_DEFAULTS.global, ...definedOnly(opts.global ?? {}) },
    latency,
    outcomes,
    waitTimeNoiseSigma: hint === 'none' ? 'none' : (hint?.noiseSigma ?? SIM_DEFAULTS.waitTimeNoiseSigma),
    waitTimeBias: hint === 'none' ? 1 : (hint?.bias ?? 1),
    credits: opts.credits ?? SIM_DEFAULTS.credits,
    subscribed: opts.subscribed ?? true,
    resultOrigin: origin.origin,
    styles: opts.styles ? [...opts.styles] : [...DEFAULT_STYLES],
    processing: opts.processing ?? 'sharp',
    faults: resolveFaults(opts.faults),
  };
}

function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
