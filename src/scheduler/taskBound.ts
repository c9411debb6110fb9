/**
 * How long a task may run from its start: the life of a held slot (a create whose answer
 * was lost) counted from the latest moment its task could have started, and of the slots
 * of a run that is gone.
 *
 * Twice the longest of the recent task latencies the ledger observed, plus 10 s:
 * latencies are about lognormal with σ ≈ 0.5 (the spec's waitTime samples, the
 * simulator's default), so the longest of 200 is about e^(2.6σ) ≈ 3.7 × the median, twice
 * that ≈ 7 × the median, which a task exceeds with probability ~5·10⁻⁵ (z = ln 7 / 0.5 ≈
 * 3.9). Observed latencies end at the poll that saw the task finished, so they already
 * over-state it; the 10 s cover a clock step and a slow poll. When the task could have
 * started is the caller's: for a create whose answer was lost, when the client gave up on
 * it (the request cannot have been accepted later), at most its send plus the call timeout.
 *
 * Capped at limits.pollCapMinutes: darkroom gives up on a task it polls after that long,
 * so it cannot wait longer for one it cannot poll. Without observations (a first run, or
 * one whose every create was lost): min(pollCap, 10 min) — 30 times the 20 s the spec's
 * waitTime samples suggest, while a resumed run never waits more than 10 min on slots it
 * can only guess about. A wrong guess costs a 429 on api_key_active_tasks, which the lane
 * still handles (slotsFull); no credit. As tasks end the bound is worked out again, and
 * the held slots already counted shrink with it.
 */
const UNOBSERVED_BOUND_MS = 10 * 60_000;
const BOUND_MARGIN_MS = 10_000;

export function taskBoundMs(longestObservedMs: number | null, pollCapMs: number): number {
  if (longestObservedMs === null || !(longestObservedMs >= 0)) return Math.min(pollCapMs, UNOBSERVED_BOUND_MS);
  return Math.min(pollCapMs, 2 * longestObservedMs + BOUND_MARGIN_MS);
}
