/**
 * The efficiency a client could reach at best on a workload, as a yardstick beside ours.
 *
 * T* (tstar.ts) takes every task's slot time to be its latency alone. No client gets
 * that: it learns that a task has finished only by polling it, so every task holds its
 * slot from its end until the next poll, and every poll spends a call. This computes the
 * run of a client better placed than any real one:
 * - it knows the latency distribution exactly, and reads the waitTime hint through the
 *   exact posterior (a hint with noise σ_h narrows the latency's σ to (σ⁻² + σ_h⁻²)^−½);
 * - it polls each task on the optimal schedule for that posterior (schedule.ts) at one
 *   price λ for the whole run, the λ that makes the run shortest;
 * - its calls take no time, a create follows a task's end at once, uploads are free, and
 *   its call budget is as generous as the windows could ever be: 1,000·⌈T/1 h⌉ calls in
 *   a run of T, 100·⌈T/1 min⌉.
 * Its tasks are the simulator's, drawn from the same seed: the yardstick meets the same
 * latencies as the run it is set beside.
 *
 * It assumes the true distribution is known and lognormal, with a hint of plain lognormal
 * noise: so it is computed only for workloads where that holds (W1–W4). Elsewhere the bench
 * sets darkroom beside the clairvoyant bound (bound.ts) and the naive peers instead.
 */
import { pollsUntil, solvePollTable, type PollTable } from '../src/scheduler/polling/schedule.js';
import { Rng } from '../src/sim/random.js';
import { HOUR_MS, MINUTE_MS } from '../src/spec/window.js';
import { pickOutcome } from '../src/sim/tasks.js';
import { lognormalOf, tStarOf, type Workload } from './workloads.js';

/** The simulator's stream of task draws (SimModel: `new Rng(seed, 1)`). */
const TASK_STREAM = 1;

export interface Ceiling {
  /** T* ÷ the best client's run time. */
  readonly efficiency: number;
  readonly runH: number;
  /** Its price of a poll, in slot-seconds, and what that buys. */
  readonly priceS: number;
  readonly pollsPerTask: number;
  readonly lagS: number;
  readonly callsPerPhoto: number;
}

const SLOTS = 3;

interface DrawnTask {
  readonly latencyMs: number;
  /** Median (ms) and σ of the posterior the client polls by. */
  readonly medianMs: number;
  readonly sigma: number;
}

/**
 * One key's tasks in order: each photo's steps, FAILs created again, an ERROR ending the
 * photo. The draws are the simulator's own (its task stream, three draws a task), so the
 * tasks are those a single-key run of the bench meets, in the order they are created.
 */
function drawTasks(
  w: Workload,
  photos: number,
  seed: number,
  truth: { medianMs: number; sigma: number },
): { tasks: DrawnTask[]; photos: number } {
  const rng = new Rng(seed, TASK_STREAM);
  const { medianMs, sigma } = truth;
  const mu = Math.log(medianMs);
  const hint = w.waitTimeHint === 'none' ? null : w.waitTimeHint.noiseSigma;
  const post = hint === null ? sigma : 1 / Math.sqrt(1 / sigma ** 2 + 1 / hint ** 2);
  const mix = { fail: w.outcomes.fail, error: w.outcomes.error, other: 0 };
  const tasks: DrawnTask[] = [];
  for (let p = 0; p < photos; p++) {
    photo: for (let s = 0; s < w.steps.length; s++) {
      for (;;) {
        const latencyMs = Math.max(1, Math.round(rng.lognormal(medianMs, sigma)));
        const outcome = pickOutcome(rng.uniform(), mix);
        const lnHint = Math.log(latencyMs) + (hint ?? 0) * rng.normal();
        const postMu = hint === null ? mu : post * post * (mu / sigma ** 2 + lnHint / hint ** 2);
        tasks.push({ latencyMs, medianMs: Math.exp(postMu), sigma: post });
        if (outcome === 'ERROR') break photo;
        if (outcome !== 'FAIL') break;
      }
    }
  }
  return { tasks, photos };
}

/** The best client's run at price λ: tasks into the first free of 3 slots, each polled optimally. */
function runAt(tasks: readonly DrawnTask[], photos: number, priceMs: number, tables: Map<string, PollTable>) {
  const slots = new Float64Array(SLOTS);
  let polls = 0;
  let lag = 0;
  for (const t of tasks) {
    let k = 0;
    for (let i = 1; i < SLOTS; i++) if (slots[i]! < slots[k]!) k = i;
    const rel = Math.round(Math.log(priceMs / t.medianMs) * 20) / 20;
    const key = `${t.sigma.toFixed(3)}|${rel}`;
    let table = tables.get(key);
    if (!table) tables.set(key, (table = solvePollTable(t.sigma, Math.exp(rel))));
    const { polls: n, seenAt: at } = pollsUntil(table, t.latencyMs / t.medianMs);
    polls += n;
    lag += at * t.medianMs - t.latencyMs;
    slots[k] = slots[k]! + at * t.medianMs;
  }
  const slotsMs = Math.max(...slots);
  const calls = photos + tasks.length + polls;
  // The windows' most generous reading: a full window's calls at the start of each one.
  const hourMs = Math.max(0, Math.ceil(calls / 1000) - 1) * HOUR_MS;
  const minuteMs = Math.max(0, Math.ceil(calls / 100) - 1) * MINUTE_MS;
  return { runMs: Math.max(slotsMs, hourMs, minuteMs), polls, lag, calls };
}

/** null where the workload's latency is not the lognormal this yardstick assumes known. */
export function ceilingOf(w: Workload, seed = 1): Ceiling | null {
  const truth = lognormalOf(w);
  if (!truth) return null;
  const photosPerKey = Math.ceil(w.photos / w.keys);
  const { tasks, photos } = drawTasks(w, photosPerKey, seed, truth);
  const tables = new Map<string, PollTable>();
  const medianMs = truth.medianMs;
  // λ from a thousandth of a task to ten tasks, on a log grid, then refined around the best.
  let best = { priceMs: 0, runMs: Infinity, polls: 0, lag: 0, calls: 0 };
  const tryPrice = (priceMs: number) => {
    const r = runAt(tasks, photos, priceMs, tables);
    if (r.runMs < best.runMs) best = { priceMs, ...r };
  };
  for (let e = -3; e <= 1.001; e += 0.1) tryPrice(medianMs * 10 ** e);
  const centre = best.priceMs;
  for (let e = -0.1; e <= 0.1001; e += 0.01) tryPrice(centre * 10 ** e);
  const tStar = tStarOf(w).ms;
  return {
    efficiency: tStar / best.runMs,
    runH: best.runMs / HOUR_MS,
    priceS: best.priceMs / 1000,
    pollsPerTask: best.polls / tasks.length,
    lagS: best.lag / tasks.length / 1000,
    callsPerPhoto: best.calls / photos,
  };
}
