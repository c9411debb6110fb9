/**
 * The clairvoyant lower bound of a run (issue 16): what a client that knew every task's
 * true latency in advance could do with the same tasks, in the same order as the run it
 * is set beside. Unlike ceiling.ts it assumes no model of the latency at all, so it holds
 * on any service shape.
 *
 *   slots  the run's tasks, in its own order of submission, each into the first free of
 *          the key's slots, each held for its true latency alone (zero poll lag, calls taking
 *          no time) — not before the photo's previous step ended, nor before the calls that
 *          must precede its create (an upload a photo begun, a create a task before it, and a
 *          poll that saw each of the i − 2 tasks that had to end for task i to find one of 3
 *          slots free: the 3-task limit is counted by the service, so every client makes them) fit
 *          the windows as read below: a task drawn long late in a call-bound run ends late
 *          for any client;
 *   calls  the calls the run's work needs at least — an upload per photo, a create and one
 *          poll per task it created — at the windows' rates (the "calls needed ÷
 *          rate"): C ÷ callsPerMinute minutes; for the hour, its most generous reading, as
 *          T*'s: (⌈C ÷ callsPerHour⌉ − 1) hours, a full hour's calls at the start of each hour
 *          (C ÷ callsPerHour would not be a bound: a run under 1,000 calls needs no hour).
 *          The minute's C ÷ rate is the reading, as T*'s is; a client that bursts a
 *          whole window at its start could beat it by up to one minute, never by more.
 *   bound  the larger of the two, per key; the largest over keys.
 *
 * Beside it, the same schedule for a client that loses exactly 1 s per task between a
 * task's end and the poll that sees it: a darkroom run at or under that time has a mean
 * lag of at most about 1 s, whatever else it does.
 *
 * The window bound reads the windows whole instead: the c-th call no sooner than the start
 * of its window, (⌈c ÷ limit⌉ − 1) spans after the run's first call. In a rolling window
 * the 21st call of a 20-a-minute key may leave the moment the first one leaves the window,
 * and no sooner. For the hour that is T*'s reading already; for the minute it is up to one
 * minute under C ÷ rate. The same list schedule runs on it: no client beats it, not even
 * one that bursts every window at its start and knows when each task ends.
 */
import type { SimModel } from '../src/sim/model.js';
import { HOUR_MS, MINUTE_MS } from '../src/spec/window.js';
import { limitsOf, type Workload } from './workloads.js';

const SLOTS = 3;

export interface BoundFigures {
  /** The clairvoyant bound, s of virtual time. */
  readonly boundS: number;
  /** Which part set it: the slots or the calls. */
  readonly boundBinds: 'slots' | 'calls';
  /** The same schedule with 1 s of lag a task. */
  readonly lag1sS: number;
  /** The same bound with the windows read whole (a call at the start of its window), s. */
  readonly windowBoundS: number;
  /** The fewest calls the run's work needs, on the busiest key: an upload a photo, a create and a poll a task. */
  readonly workCalls: number;
  /** That key's calls the service let through that were none of the work's (the usage read at a run's start). */
  readonly otherCalls: number;
  /** Mean time between a task's end and the first poll that saw it, s (from the service's side). */
  readonly meanLagS: number | null;
  /** The same, of the tasks that ended in the run's last minute, and in its last hour: the lag that is the run's end. */
  readonly lastMinuteLagS: number | null;
  readonly lastHourLagS: number | null;
  readonly tasks: number;
}

type LoggedTask = ReturnType<SimModel['taskLog']>[number];

/**
 * The tasks in order into the first free slot, not before the photo's previous step ended
 * nor before the calls that must precede the task's create could have been made: an upload
 * for each photo begun so far and a create for each task before it, at `callMs(calls)`.
 */
export function listSchedule(tasks: readonly LoggedTask[], startMs: number, extraMs: number, callMs: (calls: number) => number): number {
  const slots = new Float64Array(SLOTS).fill(startMs);
  const photoFree = new Map<string, number>();
  let end = startMs;
  let photos = 0;
  tasks.forEach((t, i) => {
    if (!photoFree.has(t.sourceId)) photos++;
    let k = 0;
    for (let j = 1; j < SLOTS; j++) if (slots[j]! < slots[k]!) k = j;
    // Before task i's create: an upload per photo begun, the creates before it, and a poll that
    // saw each of the i − 2 tasks that had to end to leave one of the 3 slots free.
    const before = photos + i + 1 + Math.max(0, i - (SLOTS - 1));
    const begin = Math.max(slots[k]!, photoFree.get(t.sourceId) ?? startMs, startMs + callMs(before));
    const done = begin + t.latencyMs + extraMs;
    slots[k] = done;
    photoFree.set(t.sourceId, done);
    end = Math.max(end, done);
  });
  return end - startMs;
}

export function boundOf(w: Workload, model: SimModel, startMs: number, endMs: number): BoundFigures {
  const { callsPerMinute, callsPerHour } = limitsOf(w);
  const log = model.taskLog();
  const byKey = new Map<string, LoggedTask[]>();
  for (const t of log) {
    let list = byKey.get(t.keyFingerprint);
    if (!list) byKey.set(t.keyFingerprint, (list = []));
    list.push(t);
  }
  const audit = model.audit();
  let bound = 0;
  let binds: BoundFigures['boundBinds'] = 'slots';
  let lag1 = 0;
  let whole = 0;
  let workCalls = 0;
  let otherCalls = 0;
  const steady = (c: number) => Math.max((c / callsPerMinute) * MINUTE_MS, wholeSpans(c, callsPerHour) * HOUR_MS);
  const windows = (c: number) => Math.max(wholeSpans(c, callsPerMinute) * MINUTE_MS, wholeSpans(c, callsPerHour) * HOUR_MS);
  for (const [fp, tasks] of byKey) {
    tasks.sort((a, b) => a.creation - b.creation);
    const k = audit.keys[fp];
    const uploads = k?.uploads ?? 0;
    const calls = uploads + 2 * tasks.length;
    if (calls > workCalls) {
      workCalls = calls;
      otherCalls = k ? k.accepted - k.uploads - k.creates - k.polls : 0;
    }
    const callsMs = steady(calls);
    const slotsMs = listSchedule(tasks, startMs, 0, steady);
    const b = Math.max(callsMs, slotsMs);
    if (b > bound) {
      bound = b;
      binds = callsMs > slotsMs ? 'calls' : 'slots';
    }
    lag1 = Math.max(lag1, Math.max(callsMs, listSchedule(tasks, startMs, 1000, steady)));
    whole = Math.max(whole, windows(calls), listSchedule(tasks, startMs, 0, windows));
  }
  const seen = log.filter((t) => t.seenEndedAt !== null);
  const lagOf = (ts: readonly LoggedTask[]) =>
    ts.length > 0 ? ts.reduce((s, t) => s + (t.seenEndedAt! - t.creation - t.latencyMs), 0) / ts.length / 1000 : null;
  const endedAfter = (ms: number) => seen.filter((t) => t.creation + t.latencyMs > ms);
  return {
    boundS: bound / 1000,
    boundBinds: binds,
    lag1sS: lag1 / 1000,
    windowBoundS: whole / 1000,
    workCalls,
    otherCalls,
    meanLagS: lagOf(seen),
    lastMinuteLagS: lagOf(endedAfter(endMs - MINUTE_MS)),
    lastHourLagS: lagOf(endedAfter(endMs - HOUR_MS)),
    tasks: log.length,
  };
}

/** Whole spans before the c-th call of a window of `limit` calls may start: ⌈c ÷ limit⌉ − 1. */
export function wholeSpans(c: number, limit: number): number {
  return Math.max(0, Math.ceil(c / limit) - 1);
}
