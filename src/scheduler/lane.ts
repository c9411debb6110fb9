import { clock } from '../clock.js';
import type { ItemRow, Ledger } from '../ledger/index.js';
import type { CallBudget } from './budget.js';

/** What a stage tells the lane after its call. */
export interface Feedback {
  /** The server asked for a pause (429/503 with Retry-After, RateLimit-Reset, or backoff). */
  readonly pauseUntilMs?: number;
  /** 429 api_key_active_tasks: the server counts more of our tasks than we do. */
  readonly slotsFull?: boolean;
  /** A task reached a terminal state (its slot is free). */
  readonly taskEnded?: boolean;
}

export interface LaneStages {
  upload(item: ItemRow): Promise<Feedback>;
  create(item: ItemRow): Promise<Feedback>;
  poll(item: ItemRow): Promise<Feedback>;
}

/** Run-wide switches the lanes obey. */
export interface RunControl {
  /** Stop making calls (account stop, signal). */
  stopped: boolean;
  /** No new creates (insufficient credits): finish polling what is in flight. */
  noCreates: boolean;
}

export interface LaneOptions {
  readonly keyFp: string;
  readonly activeTasks: number;
  /** Calls of this lane in flight at once; a slow upload must not stall due polls. */
  readonly maxInflight?: number;
  /** Called after every finished action, so the downloader and progress display wake up. */
  readonly onActivity?: () => void;
}

type Action = { kind: 'poll' | 'create' | 'upload'; item: ItemRow };

/**
 * One API key's lane: it alone spends that key's calls and slots. Priorities when calls
 * are short: due polls, then creates into free slots, then uploads just in time (never
 * more inputs uploaded-but-not-created than free slots plus one, so an upload is not
 * spent long before its create).
 */
export class Lane {
  private readonly inflightItems = new Set<number>();
  private inflightCalls = 0;
  private uploadsInflight = 0;
  private slotLimit: number;
  private wakeUp: (() => void) | undefined;
  private readonly maxInflight: number;

  constructor(
    private readonly ledger: Ledger,
    private readonly budget: CallBudget,
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
    const w = this.wakeUp;
    this.wakeUp = undefined;
    w?.();
  }

  async run(): Promise<void> {
    for (;;) {
      if (this.finished()) {
        while (this.inflightCalls > 0) await this.idle(Infinity);
        if (this.finished()) return;
        continue;
      }
      if (this.inflightCalls >= this.maxInflight) {
        await this.idle(Infinity);
        continue;
      }
      const now = clock.now();
      const action = this.pick(now);
      if (action) {
        const at = this.budget.availableAt(now);
        if (at <= now) {
          this.dispatch(action, now);
          continue;
        }
        await this.idle(at);
        continue;
      }
      await this.idle(this.nextDue());
    }
  }

  private finished(): boolean {
    const fp = this.opts.keyFp;
    if (this.control.stopped) return this.inflightCalls === 0;
    if (this.inflightCalls > 0) return false;
    const items = this.ledger.items;
    if (items.countInStates(fp, ['active', 'submitting', 'uploading']) > 0) return false;
    if (this.control.noCreates) return true;
    return items.pendingFor(fp) - items.countInStates(fp, ['succeeded', 'downloading']) === 0;
  }

  private pick(now: number): Action | undefined {
    if (this.control.stopped) return undefined;
    const fp = this.opts.keyFp;
    const items = this.ledger.items;
    const poll = items.nextInState('active', fp, now, this.inflightItems);
    if (poll) return { kind: 'poll', item: poll };
    if (this.control.noCreates) return undefined;
    const used = items.countInStates(fp, ['active', 'submitting']);
    const free = Math.max(0, this.slotLimit - used);
    if (free > 0) {
      const create = items.nextInState('uploaded', fp, now, this.inflightItems);
      if (create) return { kind: 'create', item: create };
    }
    const waiting = items.countInStates(fp, ['uploaded']) + this.uploadsInflight;
    if (waiting < free + 1) {
      const upload = items.nextToUpload(fp, now, this.inflightItems);
      if (upload) return { kind: 'upload', item: upload };
    }
    return undefined;
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
      const free = Math.max(0, this.slotLimit - items.countInStates(fp, ['active', 'submitting']));
      if (free > 0) dues.push(items.earliestDue('uploaded', fp, this.inflightItems));
      const waiting = items.countInStates(fp, ['uploaded']) + this.uploadsInflight;
      if (waiting < free + 1) dues.push(items.earliestDue('queued', fp, this.inflightItems));
    }
    const known = dues.filter((d): d is number => d !== undefined);
    return known.length > 0 ? Math.max(clock.now() + 1, Math.min(...known)) : Infinity;
  }

  private dispatch(action: Action, now: number): void {
    this.budget.take(now);
    this.inflightCalls++;
    this.inflightItems.add(action.item.id);
    if (action.kind === 'upload') this.uploadsInflight++;
    const run =
      action.kind === 'poll'
        ? this.stages.poll(action.item)
        : action.kind === 'create'
          ? this.stages.create(action.item)
          : this.stages.upload(action.item);
    void run
      .then((fb) => this.apply(fb), (err: unknown) => this.onStageCrash(err))
      .finally(() => {
        this.inflightCalls--;
        this.inflightItems.delete(action.item.id);
        if (action.kind === 'upload') this.uploadsInflight--;
        this.wake();
        this.opts.onActivity?.();
      });
  }

  private apply(fb: Feedback): void {
    if (fb.pauseUntilMs !== undefined) this.budget.pauseUntil(fb.pauseUntilMs);
    if (fb.slotsFull) {
      // The server holds a task we do not count (an ambiguous create that did go
      // through, say): create nothing more until one of ours ends.
      this.slotLimit = Math.max(1, this.ledger.items.countInStates(this.opts.keyFp, ['active', 'submitting']));
    }
    if (fb.taskEnded) this.slotLimit = this.opts.activeTasks;
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
