import { clock } from '../../clock.js';
import type { ItemRow } from '../../ledger/index.js';
import type { Reservation } from '../budget/keyBudget.js';
import type { CreateOutcome } from '../budget/keySlots.js';
import { LanePacing } from './pacing.js';
import { LaneQueues, type Action } from './queues.js';
import type { Feedback, LaneContext, LaneStages, LaneState } from './types.js';

/** Calls of a lane in flight at once: a slow upload must not stall due polls. */
const MAX_INFLIGHT = 4;
/** The first wait after a 429 on api_key_active_tasks before any task was seen to end (SlotWait). */
const FIRST_SLOT_WAIT_MS = 15_000;
/** Nor less than this, however short the tasks: each refusal is a call in the key's windows. */
const MIN_SLOT_WAIT_MS = 2_000;
/** Nor more: a held slot is counted at most until its task could have ended anyway (keySlots.ts taskBoundMs). */
const MAX_SLOT_WAIT_MS = 5 * 60_000;

/**
 * A poll takes the minute's places kept for creates only if its task has likely ended: it
 * then likely frees the slot the create is waiting for. A probe of a task likely still
 * running would spend the place on nothing: without this rule calls-nohint spent 3.14 calls a
 * photo instead of 3.12 over seeds 1–6, more than its seed-to-seed spread (docs/decisions.md).
 */
const FREES_A_SLOT = 0.5;

/**
 * One API key's lane: it spends that key's calls and slots for this run, through the key's
 * machine-wide budget (other processes using the key spend from the same one). This is its
 * loop: pick the next action (queues.ts), wait for the budget to allow it, reserve its
 * call and start its stage, and take the stage's feedback; its pacing and the poller's
 * tuning are pacing.ts.
 */
export class Lane {
  private readonly state: LaneState;
  private readonly queues: LaneQueues;
  private readonly pacer: LanePacing;
  private wakeUp: (() => void) | undefined;
  /** Bumped by every event; a choice made before the last event must be made again. */
  private epoch = 0;
  private waiting: { action: Action; epoch: number } | undefined;

  private readonly budget: LaneContext['budget'];

  constructor(
    private readonly ctx: LaneContext,
    private readonly stages: LaneStages,
  ) {
    this.budget = ctx.budget;
    this.state = {
      inflightItems: new Set(),
      inflightCalls: 0,
      uploadsInflight: 0,
      pollsInflight: 0,
      slotLimit: ctx.config.limits.activeTasks,
      slotWait: { untilMs: 0, probeUntilMs: 0, refusals: 0, lastMs: Number.NEGATIVE_INFINITY, lastWaitMs: 0 },
      probing: false,
    };
    this.queues = new LaneQueues(ctx, this.state);
    this.pacer = new LanePacing(ctx, this.state);
  }

  /** Wake the loop early (another lane or the runner changed something). */
  wake(): void {
    this.epoch++;
    const w = this.wakeUp;
    this.wakeUp = undefined;
    w?.();
  }

  async run(): Promise<void> {
    for (;;) {
      if (this.ctx.control.stopped) {
        while (this.state.inflightCalls > 0) await this.idle(Infinity);
        return;
      }
      const now = clock.now();
      this.pacer.tune(now);
      this.pacer.check(now);
      if (this.state.inflightCalls >= MAX_INFLIGHT) {
        this.pacer.held(now, false, false);
        await this.idle(Infinity);
        continue;
      }
      // Waiting for the budget changes nothing in the ledger: if no event came meanwhile,
      // the action chosen before the wait is still the one to take.
      const kept = this.waiting && this.waiting.epoch === this.epoch ? this.waiting.action : undefined;
      this.waiting = undefined;
      const { action, slotBlocked } = kept ? { action: kept, slotBlocked: false } : this.queues.pick(now);
      // The places kept for creates, kept only while a create may want them (takesKeptPlace).
      this.budget.windows.setCreatesAhead(this.pacer.lastTasks ? 'none' : this.takesKeptPlace(action, now) ? 'later' : 'soon');
      const at = action ? this.budget.windowsAt(now).availableAt(now, action.kind === 'create') : now;
      this.pacer.held(now, action !== undefined && at > now, slotBlocked && (this.budget.windows.pacing || at <= now));
      if (action) {
        if (at <= now) {
          if (!this.dispatch(action, now)) await this.lostRace(action, now);
          continue;
        }
        // A due poll waiting on the pacing bucket must not hold back a create into a slot
        // that just came free: creates skip the bucket (CallBudget.availableAt).
        const create =
          action.kind === 'poll' && this.budget.windowsAt(now).availableAt(now, true) <= now ? this.queues.createCandidate(now) : undefined;
        if (create) {
          if (!this.dispatch(create, now)) await this.lostRace(create, now);
          continue;
        }
        this.waiting = { action, epoch: this.epoch };
        // An upload waiting on the minute's kept places gives way to a poll that falls due
        // meanwhile and may take them (takesKeptPlace); the upload may not.
        const pollDue = action.kind === 'upload' && this.pacer.minuteBinds ? this.queues.nextPollDue() : undefined;
        if (pollDue !== undefined && pollDue > now && pollDue < at) {
          await this.idle(pollDue);
          const then = clock.now();
          if (this.waiting?.epoch === this.epoch && this.takesKeptPlace(this.queues.pick(then).action, then)) this.epoch++;
          continue;
        }
        await this.idle(at);
        continue;
      }
      // Only now, with nothing to do, is it worth asking whether anything is left at all.
      if (this.state.inflightCalls === 0 && this.queues.finished()) return;
      await this.idle(this.queues.nextDue());
    }
  }

  /**
   * Whether `action` is a poll that may take the minute's places kept for creates: the minute
   * binds and every slot is held with no poll under way, so no create can use them before a
   * poll frees a slot, and this poll's task has likely ended (CallBudget.setCreatesAhead).
   */
  private takesKeptPlace(action: Action | undefined, now: number): boolean {
    if (action?.kind !== 'poll' || !this.pacer.minuteBinds || this.state.pollsInflight > 0) return false;
    return this.queues.freeSlots(now) === 0 && this.queues.endedChance(action.item, now) >= FREES_A_SLOT;
  }

  /**
   * Reserve the call in the key's budget (a create: its slot too), then start the stage.
   * false: another process took the room since we looked; nothing was started.
   */
  private dispatch(action: Action, now: number): boolean {
    const ticket = this.budget.reserve(now, action.kind, {
      itemId: action.item.id,
      slotLimit: this.state.slotLimit,
      ...(action.probe ? { probe: true } : {}),
    });
    // (An upload's photo stays claimed by this lane, which takes it up again.)
    if (!ticket) return false;
    this.state.inflightCalls++;
    this.state.inflightItems.add(action.item.id);
    if (action.kind === 'upload') this.state.uploadsInflight++;
    if (action.kind === 'poll') this.state.pollsInflight++;
    if (action.probe) this.state.probing = true;
    this.pacer.called();
    const run =
      action.kind === 'poll'
        ? this.stages.poll(action.item, ticket)
        : action.kind === 'create'
          ? this.stages.create(action.item, ticket, action.probe)
          : this.stages.upload(action.item, ticket);
    // Nothing may throw out of this chain (no one awaits it: a throw would be the host
    // process's unhandled rejection); whatever does is a crash that stops the run.
    void run
      .then(
        (fb) => this.guarded(() => this.apply(fb, action, ticket)),
        (err: unknown) => this.onStageCrash(err),
      )
      .finally(() => {
        this.guarded(() => {
          this.budget.settle(ticket);
          this.state.inflightCalls--;
          this.state.inflightItems.delete(action.item.id);
          if (action.kind === 'upload') this.state.uploadsInflight--;
          if (action.kind === 'poll') this.state.pollsInflight--;
          if (action.probe) this.state.probing = false;
        });
        this.wake();
        this.guarded(() => {
          this.ctx.guards?.settle();
          this.ctx.events.activity();
        });
      });
    return true;
  }

  /** The reservation failed: the budget has read the store again, so wait for what it now says. */
  private async lostRace(action: Action, now: number): Promise<void> {
    this.waiting = undefined;
    await this.idle(Math.max(now + 1, this.budget.windowsAt(now).availableAt(now, action.kind === 'create')));
  }

  /** What became of a create, as the ledger recorded it, for the key's slot row. */
  private createOutcome(item: ItemRow, ticket: Reservation): CreateOutcome {
    if (!ticket.sent) return { kind: 'gone' };
    const sub = this.ctx.ledger.submissions.latestForItem(item.id);
    if (!sub || sub.request_id !== ticket.sentRequestId) return { kind: 'unknown' };
    switch (sub.state) {
      case 'accepted':
        return sub.task_id ? { kind: 'accepted', taskId: sub.task_id } : { kind: 'unknown' };
      case 'ambiguous':
        return { kind: 'held', ref: sub.request_id, sentMs: sub.sent_ms, resolvedMs: sub.resolved_ms ?? clock.now() };
      case 'rejected':
        return { kind: 'gone' };
      default:
        return { kind: 'unknown' };
    }
  }

  private apply(fb: Feedback, action: Action, ticket: Reservation): void {
    const now = clock.now();
    const state = this.state;
    if (action.kind === 'create') {
      const outcome = this.createOutcome(action.item, ticket);
      this.budget.slots.createResolved(ticket.slotId, outcome, clock.now());
      if (outcome.kind === 'accepted') {
        const w = state.slotWait;
        // A create into a slot this run counted free says nothing of the guessed ones: only
        // an accepted probe (or none left to guess about) ends the probes' wait.
        const guessing = this.budget.slots.guessed(now).oldestSinceMs < Infinity;
        state.slotWait = action.probe || !guessing ? { ...w, untilMs: 0, probeUntilMs: 0, refusals: 0 } : { ...w, untilMs: 0 };
        // Additive increase: a create accepted while the lane's slots are full shows room for
        // one more, unless the service refused one lately (another client's tasks come and
        // go as ours do: a slot taken back at once met a 429 nearly every time).
        const calm = now - w.lastMs >= 2 * w.lastWaitMs;
        if (calm && this.budget.slots.certainInUse(now) >= state.slotLimit)
          state.slotLimit = Math.min(this.ctx.config.limits.activeTasks, state.slotLimit + 1);
      }
    }
    if (action.kind === 'poll' && fb.taskEnded && action.item.task_id) {
      if (fb.mayStillRun) this.budget.slots.taskGivenUp(action.item.task_id);
      else this.budget.slots.taskEnded(action.item.task_id);
    }
    if (fb.pauseUntilMs !== undefined) {
      this.budget.pauseUntil(fb.pauseUntilMs);
      this.ctx.ledger.calls.pause(this.ctx.keyFp, fb.pauseUntilMs, now);
    }
    if (fb.slotsFull) {
      // The service counts tasks no live process here tracks: held ones still running, or
      // another client's (another machine with the same key). Wait (SlotWait) rather than
      // ask again at once: every refusal is a call in the key's windows. Unless it answered
      // a probe (the guessed rows already count), fill no more slots than this run holds.
      const refusals = state.slotWait.refusals + 1;
      const base = this.queues.learnedLatencyMs() ?? FIRST_SLOT_WAIT_MS;
      const wait = Math.min(MAX_SLOT_WAIT_MS, Math.max(base, MIN_SLOT_WAIT_MS) * 2 ** (refusals - 1));
      const untilMs = Math.max(now + wait, fb.slotsRetryAtMs ?? 0);
      state.slotWait = { untilMs, probeUntilMs: untilMs, refusals, lastMs: now, lastWaitMs: untilMs - now };
      if (!action.probe) {
        state.slotLimit = Math.max(1, this.budget.slots.certainInUse(now));
        // Not a probe: every row here, guessed ones too, left this slot free, so another
        // client of the key holds it, and spends the key's calls as well.
        this.budget.adoptOthersTasks(now);
      }
    }
    // One of this run's tasks ended: a slot seen free, worth a create at once.
    if (fb.taskEnded && !fb.mayStillRun) state.slotWait.untilMs = 0;
  }

  /** A stage threw something it should have classified: a bug. Stop the run loudly rather than spin. */
  private onStageCrash(err: unknown): void {
    this.ctx.control.crashed(err);
  }

  /** Run `fn`; what it throws is a crash (onStageCrash), never an exception out of a promise callback. */
  private guarded(fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.onStageCrash(err);
      this.wake();
    }
  }

  private idle(untilMs: number): Promise<void> {
    return new Promise<void>((resolve) => {
      let handle: ReturnType<typeof clock.setTimer> | undefined;
      const done = () => {
        if (handle) clock.clearTimer(handle);
        this.wakeUp = undefined;
        resolve();
      };
      this.wakeUp = done;
      if (Number.isFinite(untilMs)) handle = clock.setTimer(done, Math.max(0, untilMs - clock.now()));
    });
  }
}
