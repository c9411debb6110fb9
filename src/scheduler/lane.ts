import { clock } from '../clock.js';
import type { ItemRow, Ledger } from '../ledger/index.js';
import type { CreateOutcome, KeyBudget } from './keyBudget.js';
import type { Reservation } from './reservation.js';
import type { PollPlanner } from './polling.js';

/** What a stage tells the lane after its call. */
export interface Feedback {
  /** The server asked for a pause (429/503 with Retry-After, RateLimit-Reset, or backoff). */
  readonly pauseUntilMs?: number;
  /** 429 api_key_active_tasks: the server counts more of our tasks than we do. */
  readonly slotsFull?: boolean;
  /** A task reached a terminal state (its slot is free). */
  readonly taskEnded?: boolean;
}

/**
 * The stages a lane dispatches. Each makes at most one API call, under `ticket`: the
 * call's reservation in the key's budget, which its client reports sending and answer to.
 */
export interface LaneStages {
  upload(item: ItemRow, ticket: Reservation): Promise<Feedback>;
  create(item: ItemRow, ticket: Reservation): Promise<Feedback>;
  poll(item: ItemRow, ticket: Reservation): Promise<Feedback>;
}

/** Run-wide switches the lanes obey. */
export interface RunControl {
  /** Stop making calls (account stop, signal). */
  stopped: boolean;
  /** No new creates (insufficient credits): finish polling what is in flight. */
  noCreates: boolean;
}

/**
 * What a lane asks before it spends on a photo (the run's spending guards,
 * src/run/guards.ts). Answered from memory and the ledger, never with a call.
 */
export interface StartGate {
  /** A queued photo the lane is about to take for upload: false leaves it in the queue. */
  mayTake(item: ItemRow): boolean;
  /** Once the photo cap is reached: only photos this run already took are worked on. */
  readonly onlyTaken: boolean;
  /** A create about to be sent: false once it would pass the credit limit (which stops all creates). */
  mayCreate(item: ItemRow): boolean;
}

export interface LaneOptions {
  readonly keyFp: string;
  readonly activeTasks: number;
  /** Calls of this lane in flight at once; a slow upload must not stall due polls. */
  readonly maxInflight?: number;
  /** Called after every finished action, so the downloader and progress display wake up. */
  readonly onActivity?: () => void;
  /** Poll timing whose θ this lane tunes by which resource holds work back. */
  readonly polling?: PollPlanner;
  /** Typical task latency (ms), the pace at which θ moves. */
  readonly latencyScaleMs?: () => number;
  /** Steps of the job, and how many lanes share the unclaimed photos: for the pacing estimate. */
  readonly stepCount?: number;
  readonly laneCount?: number;
  /** The job's steps' capabilities, for the price of a poll (price.ts). */
  readonly capabilities?: readonly string[];
  /** The spending guards (--max-photos, --max-credits…), asked before a photo is taken and before each create. */
  readonly gate?: StartGate;
}

type Action = { kind: 'poll' | 'create' | 'upload'; item: ItemRow };

/**
 * One API key's lane: it spends that key's calls and slots for this run, through the key's
 * machine-wide budget (other processes using the key spend from the same one). Priorities
 * when calls are short: due polls, then creates into free slots, then uploads just in time
 * (never more inputs uploaded-but-not-created than free slots plus one, so an upload is
 * not spent long before its create).
 */
export class Lane {
  private readonly inflightItems = new Set<number>();
  private inflightCalls = 0;
  private uploadsInflight = 0;
  private slotLimit: number;
  private wakeUp: (() => void) | undefined;
  private readonly maxInflight: number;
  /** What held work back since `since`: the call budget, or the slots. */
  private bound = { calls: false, slots: false, since: Number.NaN, unusedMs: 0 };
  private slotBlocked = false;
  /** Bumped by every event; a choice made before the last event must be made again. */
  private epoch = 0;
  private waiting: { action: Action; epoch: number } | undefined;
  private pacingCheckedAt = Number.NEGATIVE_INFINITY;
  private callsSinceCheck = 0;
  private recheckAfterCalls = Infinity;
  /** Nothing left to create: only the tasks running now remain (checkPacing). */
  private lastTasks = false;
  private polls = 0;
  private tasksEnded = 0;

  constructor(
    private readonly ledger: Ledger,
    private readonly budget: KeyBudget,
    private readonly stages: LaneStages,
    private readonly control: RunControl,
    private readonly opts: LaneOptions,
  ) {
    this.slotLimit = opts.activeTasks;
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
        while (this.inflightCalls > 0) await this.idle(Infinity);
        return;
      }
      const now = clock.now();
      this.tune(now);
      this.checkPacing(now);
      if (this.inflightCalls >= this.maxInflight) {
        this.bound = { calls: false, slots: false, since: now, unusedMs: this.budget.unusedMs(now) };
        await this.idle(Infinity);
        continue;
      }
      // Waiting for the budget changes nothing in the ledger: if no event came meanwhile,
      // the action chosen before the wait is still the one to take.
      const kept = this.waiting && this.waiting.epoch === this.epoch ? this.waiting.action : undefined;
      this.waiting = undefined;
      this.slotBlocked = false;
      const action = kept ?? this.pick(now);
      // With nothing left to create, the places kept for creates are the last polls'.
      const at = action ? this.budget.availableAt(now, action.kind === 'create' || (action.kind === 'poll' && this.lastTasks)) : now;
      this.bound = {
        calls: action !== undefined && at > now,
        slots: this.slotBlocked && (this.budget.pacing || at <= now),
        since: now,
        unusedMs: this.budget.unusedMs(now),
      };
      if (action) {
        if (at <= now) {
          if (!this.dispatch(action, now)) await this.lostRace(action, now);
          continue;
        }
        // A due poll waiting on the pacing bucket must not hold back a create into a slot
        // that just came free: creates skip the bucket (CallBudget.availableAt).
        const create = action.kind === 'poll' && this.budget.availableAt(now, true) <= now ? this.createCandidate(now) : undefined;
        if (create) {
          if (!this.dispatch(create, now)) await this.lostRace(create, now);
          continue;
        }
        this.waiting = { action, epoch: this.epoch };
        await this.idle(at);
        continue;
      }
      // Only now, with nothing to do, is it worth asking whether anything is left at all.
      if (this.inflightCalls === 0 && this.finished()) return;
      await this.idle(this.nextDue());
    }
  }

  private finished(): boolean {
    const fp = this.opts.keyFp;
    if (this.control.stopped) return this.inflightCalls === 0;
    if (this.inflightCalls > 0) return false;
    const items = this.ledger.items;
    if (items.hasInStates(fp, ['active', 'submitting', 'uploading'])) return false;
    if (this.control.noCreates) return true;
    return !items.hasInStates(fp, ['queued', 'uploaded']) && (this.opts.gate?.onlyTaken || !items.hasUnclaimed());
  }

  private pick(now: number): Action | undefined {
    if (this.control.stopped) return undefined;
    const fp = this.opts.keyFp;
    const items = this.ledger.items;
    const poll = items.nextInState('active', fp, now, this.inflightItems);
    if (poll) return { kind: 'poll', item: poll };
    if (this.control.noCreates) return undefined;
    const free = this.freeSlots();
    if (free > 0) {
      const create = this.createCandidate(now, free);
      if (create) return create;
    } else if (items.hasDue('uploaded', fp, now, this.inflightItems)) {
      this.slotBlocked = true;
    }
    const waiting = items.countInStates(fp, ['uploaded']) + this.uploadsInflight;
    if (waiting < free + 1) {
      const gate = this.opts.gate;
      // Past the photo cap only the photos this lane already took (claimed) are taken up again.
      const upload = gate?.onlyTaken ? items.nextInState('queued', fp, now, this.inflightItems) : items.nextToUpload(fp, now, this.inflightItems);
      if (upload && (gate?.mayTake(upload) ?? true) && items.claimQueued(upload.id, fp)) return { kind: 'upload', item: { ...upload, key_fp: fp } };
    }
    return undefined;
  }

  /**
   * Slots of the key free for a create: the key's limit less every slot counted in its
   * machine-wide store (this run's creates and tasks, other processes', held creates).
   */
  private freeSlots(now = clock.now()): number {
    return Math.max(0, this.slotLimit - this.budget.slotsInUse(now));
  }

  /** A create into a free slot, if one is due (`free`: the free slots, when the caller has counted them). */
  private createCandidate(now: number, free = this.freeSlots()): Action | undefined {
    if (this.control.stopped || this.control.noCreates || free === 0) return undefined;
    const item = this.ledger.items.nextInState('uploaded', this.opts.keyFp, now, this.inflightItems);
    if (item && this.opts.gate && !this.opts.gate.mayCreate(item)) return undefined;
    return item ? { kind: 'create', item } : undefined;
  }

  /**
   * Pace calls at the hour rate while the work left needs more calls than the hour window
   * has room for (see CallBudget.setPacing). Re-estimated every 30 s: the counts are
   * cheap but not free at 10,000 photos.
   */
  private checkPacing(now: number): void {
    // Unpaced, the price follows the work left closely (a short job lasts minutes); paced,
    // feedback moves it and the counts are worth re-reading only every 30 s.
    // Near the end of the hour's room a few polls decide whether the last photo waits an
    // hour: then the price is worked out again after every quarter of the calls to spare.
    if (now - this.pacingCheckedAt < (this.budget.pacing ? 30_000 : 5_000) && this.callsSinceCheck < this.recheckAfterCalls) return;
    this.pacingCheckedAt = now;
    this.callsSinceCheck = 0;
    const w = this.ledger.items.remainingWork(this.opts.keyFp, this.opts.stepCount ?? 1);
    const steps = this.opts.stepCount ?? 1;
    const uploads = w.ownQueued + w.unclaimed / (this.opts.laneCount ?? 1);
    const tasks = uploads * steps + w.stepsLeft;
    // At least a create and a poll per task: if even that overflows the hour window,
    // the hour binds and calls are paced; if it fits, what is left over is the polls' to spend.
    const need = uploads + 2 * tasks;
    const headroom = this.budget.hourHeadroom(now);
    const paced = need > headroom;
    this.recheckAfterCalls = paced ? Infinity : Math.max(1, Math.floor((headroom - need) / 4));
    const active = this.ledger.items.countInStates(this.opts.keyFp, ['active', 'submitting']);
    this.lastTasks = uploads === 0 && tasks <= active;
    this.budget.setPacing(paced, now);
    const polling = this.opts.polling;
    if (!polling) return;
    polling.setSpare(paced || tasks === 0 ? null : (headroom - need) / tasks);
    if (paced) {
      polling.setBudget(null);
      return;
    }
    const limits = this.budget.limits;
    const used = this.budget.usage(now);
    const { minute, hour } = this.budget.calls;
    const { minuteReserve, createReserve } = this.budget.calls;
    polling.setBudget({
      uploads,
      tasks: Math.max(0, tasks - active),
      active,
      slots: this.slotLimit,
      capabilities: this.opts.capabilities ?? [],
      // Polls may not take the places kept for creates (CallBudget's createReserve).
      windows: [
        { headroom: limits.callsPerMinute - used.minute - minuteReserve, waitFor: (k) => minute.waitFor(now, k) },
        { headroom: headroom - createReserve, waitFor: (k) => hour.waitFor(now, k) },
      ],
    });
  }

  /** Feed θ the state that held since the last decision (see PollPlanner.adjust). */
  private tune(now: number): void {
    const b = this.bound;
    if (!this.opts.polling || Number.isNaN(b.since)) return;
    const dt = now - b.since;
    const callMs = b.calls ? dt : 0;
    // Paced: slots bound only for the time calls were actually lost (the bucket full);
    // unpaced: for the whole time a create waited on a slot with a call free to spend.
    const slotMs = !b.slots ? 0 : this.budget.pacing ? this.budget.unusedMs(now) - b.unusedMs : dt;
    this.opts.polling.adjust(callMs, slotMs, this.opts.latencyScaleMs?.() ?? 20_000);
  }

  /**
   * The earliest time something may become actionable without another event. Work that
   * waits for a slot or for the just-in-time rule is left out: a finished call wakes the
   * loop for that, and counting it here would spin.
   */
  private nextDue(): number {
    const fp = this.opts.keyFp;
    const items = this.ledger.items;
    const dues = [items.earliestDue('active', fp, this.inflightItems)];
    if (!this.control.noCreates && !this.control.stopped) {
      const free = this.freeSlots();
      if (free > 0) dues.push(items.earliestDue('uploaded', fp, this.inflightItems));
      // Waiting for a slot that no event of this run will free (a held create expiring,
      // another process's task): wake when it may have changed.
      else if (items.hasInStates(fp, ['uploaded'])) dues.push(this.budget.nextSlotChangeAt(clock.now()));
      const waiting = items.countInStates(fp, ['uploaded']) + this.uploadsInflight;
      if (waiting < free + 1) dues.push(items.earliestDue('queued', fp, this.inflightItems, this.opts.gate?.onlyTaken));
    }
    const known = dues.filter((d): d is number => d !== undefined);
    return known.length > 0 ? Math.max(clock.now() + 1, Math.min(...known)) : Infinity;
  }

  /**
   * Reserve the call in the key's budget (a create: its slot too), then start the stage.
   * false: another process took the room since we looked; nothing was started.
   */
  private dispatch(action: Action, now: number): boolean {
    const ticket = this.budget.reserve(now, action.kind, { itemId: action.item.id, slotLimit: this.slotLimit });
    // (An upload's photo stays claimed by this lane, which takes it up again.)
    if (!ticket) return false;
    this.inflightCalls++;
    this.inflightItems.add(action.item.id);
    if (action.kind === 'upload') this.uploadsInflight++;
    if (action.kind === 'poll') this.polls++;
    this.callsSinceCheck++;
    const run =
      action.kind === 'poll'
        ? this.stages.poll(action.item, ticket)
        : action.kind === 'create'
          ? this.stages.create(action.item, ticket)
          : this.stages.upload(action.item, ticket);
    void run
      .then((fb) => this.apply(fb, action, ticket), (err: unknown) => this.onStageCrash(err))
      .finally(() => {
        this.budget.settle(ticket);
        this.inflightCalls--;
        this.inflightItems.delete(action.item.id);
        if (action.kind === 'upload') this.uploadsInflight--;
        this.wake();
        this.opts.onActivity?.();
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
    if (action.kind === 'poll' && fb.taskEnded && action.item.task_id) this.budget.taskEnded(action.item.task_id);
    if (fb.pauseUntilMs !== undefined) {
      this.budget.pauseUntil(fb.pauseUntilMs);
      this.ledger.calls.pause(this.opts.keyFp, fb.pauseUntilMs, clock.now());
    }
    if (fb.slotsFull) {
      // The server holds a task we do not count (an ambiguous create of another client
      // that did go through, say): create nothing more until one of ours ends.
      this.slotLimit = Math.max(1, this.budget.slotsInUse(clock.now()));
    }
    if (fb.taskEnded) {
      this.slotLimit = this.opts.activeTasks;
      this.tasksEnded++;
    }
  }

  /** A stage threw something it should have classified: a bug. Stop the run loudly rather than spin. */
  private onStageCrash(err: unknown): void {
    this.control.stopped = true;
    this.crash = err;
  }

  crash: unknown;

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
