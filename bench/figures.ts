/**
 * What one run of a workload measured, from the simulator's audit (what the service saw),
 * never from the client's own counters.
 */
import type { Audit } from '../src/sim/audit.js';
import type { BoundFigures } from './bound.js';
import { type Workload, tStarOf } from './workloads.js';

export interface RunFigures {
  readonly workload: string;
  /** darkroom, or a naive peer (naive.ts): `naive` (3 s polls), `poll2s`, `wait3s`. */
  readonly client: string;
  readonly photos: number;
  readonly keys: number;
  readonly tStarH: number;
  /** Which bound sets T*: the hour window, the minute window or the task slots. */
  readonly binds: string;
  /** Virtual time from the run's start to its end. */
  readonly actualH: number;
  /** T* / actual. */
  readonly efficiency: number;
  readonly done: number;
  /** Photos that ended without an output (FAIL on every attempt, ERROR, held). */
  readonly notDone: number;
  /** Every call the service saw, 429s included. */
  readonly calls: number;
  /** calls / photos that reached an end (done or not). */
  readonly callsPerPhoto: number;
  /** The most, over keys, of the calls in any rolling 60 s / 3600 s, and of tasks active at once. */
  readonly maxCallsPerMinute: number;
  readonly maxCallsPerHour: number;
  readonly maxActive: number;
  readonly rejected429: number;
  /** Wall-clock seconds of the run itself (not of writing its photos). */
  readonly wallS: number;
  /** The process's peak resident set so far, MB. */
  readonly peakRssMb: number;
  /** Virtual seconds from start to end. */
  readonly actualS: number;
  /** The clairvoyant bound on this run's own tasks, and its mean lag (bound.ts). */
  readonly bound: BoundFigures;
}

export function figuresFrom(
  w: Workload,
  client: RunFigures['client'],
  audit: Audit,
  run: { startMs: number; endMs: number; done: number; notDone: number; wallMs: number },
  bound: BoundFigures,
): RunFigures {
  const t = tStarOf(w);
  const keys = Object.values(audit.keys);
  const max = (f: (k: (typeof keys)[number]) => number) => keys.reduce((m, k) => Math.max(m, f(k)), 0);
  const calls = keys.reduce((n, k) => n + k.calls, 0);
  const actualMs = run.endMs - run.startMs;
  const ended = run.done + run.notDone;
  return {
    workload: w.name,
    client,
    photos: w.photos,
    keys: w.keys,
    tStarH: t.ms / 3_600_000,
    binds: t.binds,
    actualH: actualMs / 3_600_000,
    efficiency: actualMs > 0 ? t.ms / actualMs : 0,
    done: run.done,
    notDone: run.notDone,
    calls,
    callsPerPhoto: ended > 0 ? calls / ended : 0,
    maxCallsPerMinute: max((k) => k.maxCallsInAnyMinute),
    maxCallsPerHour: max((k) => k.maxCallsInAnyHour),
    maxActive: max((k) => k.maxActiveTasks),
    rejected429: keys.reduce((n, k) => n + k.rejected429, 0),
    wallS: run.wallMs / 1000,
    peakRssMb: process.resourceUsage().maxRSS / 1024,
    actualS: actualMs / 1000,
    bound,
  };
}
