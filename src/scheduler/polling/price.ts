import type { GridDist } from './empirical.js';

/**
 * One price per poll, from the work left against the calls left.
 *
 * Polls cost no credit; a poll's only price is the room it takes in the call windows. So
 * the question is whether the windows bind before the job ends. For a price λ (slot-ms a
 * poll must save) the learned latency gives what each task will spend — P(λ) polls, a lag
 * G(λ) — and so, for the work left:
 *
 *   calls  N(λ) = uploads + tasks·(1 + P) + active·P/2
 *          T_calls(λ) = over the windows, the longest wait until N − (room now) more
 *                       calls fit (the oldest calls must leave first: window.ts waitFor)
 *   slots  T_slots(λ) = (tasks·(E[L] + G) + active·(E[L]/2 + G)) ÷ slots
 *
 * T_calls falls as λ rises and T_slots grows. The price is the λ that makes the longer of
 * the two shortest: where the windows will not bind (short jobs, the last photos of a long
 * one) that is the floor and polls cut the lag; where they bind it is about where calls and
 * slots run out together, and calls are saved.
 *
 * The floor: a poll must save at least 0.15 s of slot time — about its own round trip on
 * a real service. Below it, polls buy lags shorter than the network can tell apart, and on
 * the short workloads of the bench the minute window began to bind: 0.1 s put due polls
 * behind one another and the lags went up, 0.25 s left calls unspent that 0.15 s turned
 * into shorter lags at fewer calls a photo than a 2 s poller spends.
 */
export const PRICE_FLOOR_MS = 150;

/**
 * And a poll must save at least this share of its task's usual latency: a task of five
 * minutes is not worth a poll every 10 s even when calls are plentiful (the last, long
 * task of a call-bound run spent 60 polls so), while tasks of 5–20 s keep the 0.15 s floor.
 * No more than 0.5 %: the long half of a bimodal service (40–60 s) must still be polled
 * every fraction of a second near its end on a short job, or the slots wait on it.
 * (docs/decisions.md has the measurements.)
 */
const RELATIVE_FLOOR = 0.005;

/** The price of a poll of a task of this scale: the run's price, or the relative floor ÷ `share` (relativeShare). */
export function taskPrice(priceMs: number, scaleMs: number, share = 1): number {
  return Math.max(priceMs, (RELATIVE_FLOOR * scaleMs) / share);
}
const PRICE_CEILING_MS = 600_000;

export interface WorkLeft {
  /** Photos still to upload. */
  readonly uploads: number;
  /** Tasks still to create. */
  readonly tasks: number;
  /** Tasks running now. */
  readonly active: number;
  readonly slots: number;
  /** The key's calls a minute (the spec's 100, or fewer set in the job). */
  readonly callsPerMinute: number;
  /** The job's steps: each photo's tasks are spread over these. */
  readonly capabilities: readonly string[];
  /** Each call window: room in it now, and how long until k calls more than that fit. */
  readonly windows: readonly { readonly headroom: number; readonly waitFor: (k: number) => number }[];
}

export interface Typical {
  readonly scaleMs: number;
  readonly dist: GridDist;
}

/**
 * `typicals`: per capability of the job, its tasks as a few (scale, shape) points, equally
 * likely; `share`: the relative floor's divisor (relativeShare).
 */
function timesAt(
  work: WorkLeft,
  typicals: readonly (readonly Typical[])[],
  priceMs: number,
  share: number,
): { callsMs: number; slotsMs: number; polls: number; lagMs: number; window: number } {
  let polls = 0;
  let lag = 0;
  let mean = 0;
  for (const points of typicals) {
    for (const t of points) {
      const table = t.dist.table(taskPrice(priceMs, t.scaleMs, share) / t.scaleMs);
      const w = 1 / (points.length * typicals.length);
      polls += w * table.polls;
      lag += w * table.lag * t.scaleMs;
      mean += w * t.dist.mean * t.scaleMs;
    }
  }
  // Polls per task vary (a task the model did not expect takes several): a margin of about
  // two standard deviations of their sum, so that the last photo of a run that fits the hour
  // window does not wait an hour for its last poll.
  const margin = 2 + 0.25 * Math.sqrt(work.tasks + work.active);
  // A running task needs one poll more at least, about half its schedule on average.
  const calls = work.uploads + work.tasks * (1 + polls) + work.active * Math.max(1, polls / 2) + margin;
  let callsMs = 0;
  let window = -1;
  work.windows.forEach((w, i) => {
    const ms = w.waitFor(Math.ceil(calls - w.headroom));
    if (ms > callsMs) {
      callsMs = ms;
      window = i;
    }
  });
  const slotsMs = (work.tasks * (mean + lag) + work.active * (mean / 2 + lag)) / Math.max(1, work.slots);
  return { callsMs, slotsMs, polls, lagMs: lag, window };
}

/**
 * The slots' plan may fill at most this share of the time the calls take: when calls bind,
 * a slot also waits for the upload and create that refill it, the last tasks run on after
 * the last calls, and lags vary around the model's — measured on calls-uniform (20 calls a
 * minute), a plan that filled the call time with slot time left the slots binding.
 */
const SLOT_SHARE = 0.8;

/**
 * Once nothing is left to upload or create, a task's lag keeps no other task from a slot:
 * it delays the run's end, and a second of that is a second of every slot's time. So the
 * floors are shared out over the slots: the last tasks are polled as a slot-second there
 * costs `slots` of one earlier in the run.
 */
function finishingShare(work: WorkLeft): number {
  return work.uploads <= 0 && work.tasks <= 0 ? Math.max(1, work.slots) : 1;
}

/**
 * The relative floor's divisor while the calls bind. A key allowed fewer calls than the
 * spec's 100 a minute is one the job has asked to be sparing with, and its floor rises with
 * the square of the shortfall: 25× at 20 a minute. Only while its calls bind: once the calls
 * left fit in the windows even at the floor (the last photos of any job), a poll costs
 * nothing whatever the key's limits, and the floor is the spec key's (priceFromBudget).
 */
export function relativeShare(work: WorkLeft): number {
  return finishingShare(work) * Math.min(1, work.callsPerMinute / SPEC_CALLS_PER_MINUTE) ** 2;
}
const SPEC_CALLS_PER_MINUTE = 100;

/**
 * The price, which window (its index in `work.windows`) binds at it (-1 when none does),
 * and the relative floor's divisor it was found with (taskPrice's `share`).
 */
export function priceFromBudget(
  work: WorkLeft,
  typicals: readonly (readonly Typical[])[],
): { priceMs: number; binding: number; share: number } {
  const free = finishingShare(work);
  if (typicals.length === 0 || work.tasks + work.active <= 0) return { priceMs: PRICE_FLOOR_MS, binding: -1, share: free };
  const floor = PRICE_FLOOR_MS / free;
  // The run's length at price λ: whichever of the calls and the slots takes longer.
  const length = (price: number, share: number) => {
    const t = timesAt(work, typicals, price, share);
    return { ms: Math.max(t.callsMs, t.slotsMs / SLOT_SHARE), polls: t.polls, binding: t.callsMs > t.slotsMs * SLOT_SHARE ? t.window : -1 };
  };
  // Where the calls left fit in the windows at the floor, polls cost nothing: the floor,
  // and no sparing for a tight key.
  const eager = length(floor, free);
  if (eager.binding < 0) return { priceMs: floor, binding: -1, share: free };
  const share = relativeShare(work);
  // λ from the floor up by ×1.1: the shortest run (the floor whenever the windows do not
  // bind, since then only the slots' time moves); among runs as long, the fewest polls (calls
  // made at one virtual instant leave the window together, so waits can tie).
  let best = floor;
  let bestAt = length(best, share);
  for (let price = floor * 1.1; price <= PRICE_CEILING_MS; price *= 1.1) {
    const at = length(price, share);
    if (at.ms < bestAt.ms || (at.ms === bestAt.ms && at.polls < bestAt.polls)) {
      best = price;
      bestAt = at;
    }
  }
  return { priceMs: best, binding: bestAt.binding, share };
}
