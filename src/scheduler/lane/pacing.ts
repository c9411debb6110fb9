import type { LaneContext, LaneState } from './types.js';

/**
 * A lane's pacing: whether its calls go at the hour rate (CallBudget.setPacing), what the
 * poller may spend (PollPlanner.setSpare, setBudget), and which resource held work back,
 * fed to the poller's θ (PollPlanner.adjust).
 */
export class LanePacing {
  /** What held work back since `since`: the call budget, or the slots. */
  private bound = { calls: false, slots: false, since: Number.NaN, unusedMs: 0 };
  private checkedAt = Number.NEGATIVE_INFINITY;
  private callsSinceCheck = 0;
  private recheckAfterCalls = Infinity;
  private lastTasksOnly = false;
  private minuteBinding = false;

  /** The job's steps' capabilities, for the price of a poll (price.ts). */
  private readonly capabilities: readonly string[];

  constructor(
    private readonly ctx: LaneContext,
    private readonly state: LaneState,
  ) {
    this.capabilities = ctx.config.steps.map((s) => s.capability);
  }

  /** Nothing left to create: only the tasks running now remain (as of the last check). */
  get lastTasks(): boolean {
    return this.lastTasksOnly;
  }

  /** The minute window binds the work left (price.ts, as of the last check): its places are the scarce thing. */
  get minuteBinds(): boolean {
    return this.minuteBinding;
  }

  /** A call was dispatched: near the end of the hour's room, calls bring the next check forward. */
  called(): void {
    this.callsSinceCheck++;
  }

  /** From `now` on, the call budget (`calls`) or the slots (`slots`) hold work back, or neither. */
  held(now: number, calls: boolean, slots: boolean): void {
    this.bound = { calls, slots, since: now, unusedMs: this.ctx.budget.windows.unusedMs(now) };
  }

  /**
   * Pace calls at the hour rate while the work left needs more calls than the hour window
   * has room for (see CallBudget.setPacing). Re-estimated every 30 s: the counts are
   * cheap but not free at 10,000 photos.
   */
  check(now: number): void {
    // Unpaced, the price follows the work left closely (a short job lasts minutes); paced,
    // feedback moves it and the counts are worth re-reading only every 30 s.
    // Near the end of the hour's room a few polls decide whether the last photo waits an
    // hour: then the price is worked out again after every quarter of the calls to spare.
    if (now - this.checkedAt < (this.ctx.budget.windows.pacing ? 30_000 : 5_000) && this.callsSinceCheck < this.recheckAfterCalls) return;
    this.checkedAt = now;
    this.callsSinceCheck = 0;
    const { ledger, keyFp } = this.ctx;
    const steps = this.ctx.config.steps.length;
    const w = ledger.items.remainingWork(keyFp, steps);
    const uploads = w.ownQueued + w.unclaimed / this.ctx.keys.length;
    const tasks = uploads * steps + w.stepsLeft;
    // At least a create and a poll per task: if even that overflows the hour window,
    // the hour binds and calls are paced; if it fits, what is left over is the polls' to spend.
    const need = uploads + 2 * tasks;
    const headroom = this.ctx.budget.windowsAt(now).hourHeadroom(now);
    const paced = need > headroom;
    this.recheckAfterCalls = paced ? Infinity : Math.max(1, Math.floor((headroom - need) / 4));
    const active = ledger.items.countInStates(keyFp, ['active', 'submitting']);
    this.lastTasksOnly = uploads === 0 && tasks <= active;
    this.ctx.budget.windows.setPacing(paced, now);
    const polling = this.ctx.polling;
    polling.setSpare(paced || tasks === 0 ? null : (headroom - need) / tasks);
    if (paced) {
      polling.setBudget(null);
      this.minuteBinding = false;
      return;
    }
    const limits = this.ctx.budget.limits;
    const used = this.ctx.budget.windowsAt(now).usage(now);
    const { minute, hour } = this.ctx.budget.windows;
    const { minuteReserve, createReserve } = this.ctx.budget.windows;
    const priced = polling.setBudget({
      uploads,
      tasks: Math.max(0, tasks - active),
      active,
      slots: this.state.slotLimit,
      callsPerMinute: limits.callsPerMinute,
      capabilities: this.capabilities,
      // Polls may not take the places kept for creates (CallBudget's createReserve).
      windows: [
        { headroom: limits.callsPerMinute - used.minute - minuteReserve, waitFor: (k) => minute.waitFor(now, k) },
        { headroom: headroom - createReserve, waitFor: (k) => hour.waitFor(now, k) },
      ],
    });
    this.minuteBinding = priced?.binding === 0;
  }

  /** Feed θ the state that held since the last decision (see PollPlanner.adjust). */
  tune(now: number): void {
    const b = this.bound;
    if (Number.isNaN(b.since)) return;
    const dt = now - b.since;
    const callMs = b.calls ? dt : 0;
    // Paced: slots bound only for the time calls were actually lost (the bucket full);
    // unpaced: for the whole time a create waited on a slot with a call free to spend.
    const slotMs = !b.slots ? 0 : this.ctx.budget.windows.pacing ? this.ctx.budget.windows.unusedMs(now) - b.unusedMs : dt;
    const latency = this.ctx.polling.latency;
    // Typical task latency (the shortest step's), the pace at which θ moves.
    this.ctx.polling.adjust(callMs, slotMs, Math.min(...this.capabilities.map((c) => latency.meanMs(c))));
  }
}
