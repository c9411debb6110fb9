/**
 * The budget model of docs/ARCHITECTURE.md § Performance model, as the operator's tools use it: how long the
 * work left will take at best under the per-key limits. `darkroom plan` feeds it the
 * whole job, the live display and `darkroom status` the work still pending.
 *
 *   per key (work split evenly over the keys):
 *     T_hour  = (⌈(C + u) ÷ callsPerHour⌉ − 1) h    u: calls already in the key's last hour
 *     T_min   = C ÷ callsPerMinute min
 *     T_slots = Σ task time ÷ activeTasks
 *   T* = max(T_hour, T_min, T_slots)
 *
 * The calls a key has spent in the last hour are counted because the run inherits them
 * (its windows are rebuilt from the ledger); a fresh key has u = 0 and this is exactly
 * docs/ARCHITECTURE.md's formula.
 */
import { HOUR_MS, MINUTE_MS } from '../spec/window.js';

export interface ModelLimits {
  readonly callsPerMinute: number;
  readonly callsPerHour: number;
  readonly activeTasks: number;
}

export type Bound = 'hour' | 'minute' | 'slots';

export interface EstimateInput {
  /** API keys (lanes) sharing the work. */
  readonly keys: number;
  readonly limits: ModelLimits;
  /** Calls still to spend, all keys together. */
  readonly calls: number;
  /** Task time still to run, all keys together: Σ attempts × mean latency, ms. */
  readonly taskMs: number;
  /** Calls already in each key's rolling hour (the busiest key sets the bound). */
  readonly usedHour?: readonly number[];
  /**
   * When known, how soon the oldest of those calls leaves the hour (ms): the first hour the
   * work waits for is that long, not a whole one.
   */
  readonly hourFreesInMs?: number | undefined;
}

export interface Estimate {
  readonly ms: number;
  readonly binds: Bound;
  readonly hourMs: number;
  readonly minuteMs: number;
  readonly slotsMs: number;
  /** Calls per key (the share of the busiest key). */
  readonly callsPerKey: number;
}

/**
 * Mean task latency assumed when neither the ledger nor the service has said anything yet.
 * The spec states none; 20 s is the simulator's default median (mean 22.7 s at σ 0.5) and
 * the order of the `waitTime` samples in the spec. Documented in docs/guide/commands.md (plan).
 */
export const ASSUMED_LATENCY_MS = 20_000;

/** Expected attempts of a step whose tasks end FAIL with probability p (each FAIL is created again). */
export function expectedAttempts(failRate: number): number {
  if (!(failRate >= 0 && failRate < 1)) throw new RangeError(`failRate must be in [0, 1), got ${failRate}`);
  return 1 / (1 - failRate);
}

export function estimate(input: EstimateInput): Estimate {
  const keys = Math.max(1, Math.floor(input.keys));
  const { limits } = input;
  const calls = Math.max(0, input.calls) / keys;
  const used = Math.max(0, ...(input.usedHour ?? [0]));
  const hoursOver = calls <= 0 ? 0 : Math.max(0, Math.ceil((calls + used) / limits.callsPerHour) - 1);
  const hourMs = hoursOver === 0 ? 0 : (hoursOver - 1) * HOUR_MS + Math.min(HOUR_MS, Math.max(0, input.hourFreesInMs ?? HOUR_MS));
  const minuteMs = (calls / limits.callsPerMinute) * MINUTE_MS;
  const slotsMs = Math.max(0, input.taskMs) / keys / limits.activeTasks;
  const bounds: Array<[Bound, number]> = [
    ['slots', slotsMs],
    ['minute', minuteMs],
    ['hour', hourMs],
  ];
  const [binds, ms] = bounds.reduce((a, b) => (b[1] > a[1] ? b : a));
  return { ms, binds, hourMs, minuteMs, slotsMs, callsPerKey: calls };
}

/** "1h 05m", "4m 10s", "12s": short enough for a progress line. */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms)) return '?';
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${String(s % 60).padStart(2, '0')}s`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h ${String(m % 60).padStart(2, '0')}m`;
  return `${Math.floor(h / 24)}d ${String(h % 24).padStart(2, '0')}h`;
}
