import { clock } from '../clock.js';
import type { ItemRow, Ledger } from '../ledger/index.js';
import type { KeyBudget } from './keyBudget.js';
import type { CreateOutcome } from './keySlots.js';
import { LanePacing } from './lanePacing.js';
import { LaneQueues, type Action } from './laneQueues.js';
import type { Feedback, LaneOptions, LaneStages, LaneState, RunControl } from './laneTypes.js';
import type { Reservation } from './reservation.js';

/**
 * A poll takes the minute's places kept for creates only if its task has likely ended: it
 * then likely frees the slot the create is waiting for. A probe of a task likely still
 * running would spend the place on nothing (short-nohint, where unhinted tasks are probed
 * while the first minute's window is full, lost 10 s so).
 */
const FREES_A_SLOT = 0.5;

/**
 * One API key's lane: it spends that key's calls and slots for this run, through the key's
 * machine-wide budget (other processes using the key spend from the same one). This is its
 * loop: pick the next action (laneQueues.ts), wait for the budget to allow it, reserve its
 * call and start its stage, and take the stage's feedback; its pacing and the poller's
 * tuning are lanePacing.ts.
 */
export class Lane {
  private readonly state: LaneState;
  private readonly queues: LaneQueues;
  private readonly pacer: LanePacing;
  private wakeUp: (() => void) | undefined;
  private readonly maxInflight: number;
  /** Bumped by every event; a choice made before the last event must be made again. */
  private epoch = 0;
  private waiting: { action: Action; epoch: number } | undefined;

  constructor(
    private readonly ledger: Ledger,
    private readonly budget: KeyBudget,
    private readonly stages: LaneStages,
    private readonly control: RunControl,
    private readonly opts: LaneOptions,
  ) {
    this.state = { inflightItems: new Set(), inflightCalls: 0, uploadsInflight: 0, pollsInflight: 0, slotLimit: opts.activeTasks };
    this.queues = new LaneQueues(ledger, budget, control, opts, this.state);
    this.pacer = new LanePacing(ledger, budget, opts, this.state);
    this.maxInflight = opts.maxInflight ?? 4;
  }

  get keyFp(): string {
    return this.opts.keyFp;
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
      if (this.control.stopped) {
        while (this.state.inflightCalls > 0) await this.idle(Infinity);
        return;
      }
      const now = clock.now();
      this.pacer.tune(now);
      this.pacer.check(now);
      if (this.state.inflightCalls >= this.maxInflight) {
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
      this.budget.calls.setCreatesAhead(this.pacer.lastTasks ? 'none' : this.takesKeptPlace(action, now) ? 'later' : 'soon');
      const at = action ? this.budget.availableAt(now, action.kind === 'create') : now;
      this.pacer.held(now, action !== undefined && at > now, slotBlocked && (this.budget.pacing || at <= now));
      if (action) {
        if (at <= now) {
          if (!this.dispatch(action, now)) await this.lostRace(action, now);
          continue;
        }
        // A due poll waiting on the pacing bucket must not hold back a create into a slot
        // that just came free: creates skip the bucket (CallBudget.availableAt).
        const create = action.kind === 'poll' && this.budget.availableAt(now, true) <= now ? this.queues.createCandidate(now) : undefined;
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
    const ticket = this.budget.reserve(now, action.kind, { itemId: action.item.id, slotLimit: this.state.slotLimit });
    // (An upload's photo stays claimed by this lane, which takes it up again.)
    if (!ticket) return false;
    this.state.inflightCalls++;
    this.state.inflightItems.add(action.item.id);
    if (action.kind === 'upload') this.state.uploadsInflight++;
    if (action.kind === 'poll') this.state.pollsInflight++;
    this.pacer.called();
    const run =
      action.kind === 'poll'
        ? this.stages.poll(action.item, ticket)
        : action.kind === 'create'
          ? this.stages.create(action.item, ticket)
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
        });
        this.wake();
        this.guarded(() => this.opts.onActivity?.());
      });
    return true;
  }

  /** The reservation failed: the budget has read the store again, so wait for what it now says. */
  private async lostRace(action: Action, now: number): Promise<void> {
    this.waiting = undefined;
    await this.idle(Math.max(now + 1, this.budget.availableAt(now, action.kind === 'create')));
  }

  /** What became of a create, as the ledger recorded it, for the key's slot row. */
  private createOutcome(item: ItemRow, ticket: Reservation): CreateOutcome {
    if (!ticket.sent) return { kind: 'gone' };
    const sub = this.ledger.submissions.latestForItem(item.id);
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
    if (action.kind === 'create') this.budget.createResolved(ticket, this.createOutcome(action.item, ticket));
    if (action.kind === 'poll' && fb.taskEnded && action.item.task_id) {
      if (fb.mayStillRun) this.budget.taskGivenUp(action.item.task_id);
      else this.budget.taskEnded(action.item.task_id);
    }
    if (fb.pauseUntilMs !== undefined) {
      this.budget.pauseUntil(fb.pauseUntilMs);
      this.ledger.calls.pause(this.opts.keyFp, fb.pauseUntilMs, clock.now());
    }
    if (fb.slotsFull) {
      // The server holds a task we do not count (an ambiguous create of another client
      // that did go through, say): create nothing more until one of ours ends.
      this.state.slotLimit = Math.max(1, this.budget.slotsInUse(clock.now()));
    }
    if (fb.taskEnded) this.state.slotLimit = this.opts.activeTasks;
  }

  /** A stage threw something it should have classified: a bug. Stop the run loudly rather than spin. */
  private onStageCrash(err: unknown): void {
    this.control.stopped = true;
    this.crash = err;
  }

  crash: unknown;

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
