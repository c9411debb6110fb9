import type { SlotRow } from '../../keystore/store.js';
import type { NewSlot } from '../../ledger/index.js';
import { type KeyCache, callTimeoutMs, type KeyBudgetOptions } from './keyCache.js';

/** While another live process holds slots this key waits for, how often to look again. */
const SLOT_RECHECK_MS = 2000;
/** While this process's own held creates bind, how often to work their bound out again. */
const HELD_RECHECK_MS = 5000;

/**
 * Slots counted busy that no live process tracks: held creates (their answer lost, their
 * task may run) and the rows of runs that are gone. Each counts until its task could have
 * ended at most (`untilMs`: the latest of them); whether the service still counts them only
 * a create can tell (a probe, KeyBudget.reserve).
 */
export interface GuessedSlots {
  /** Held rows: creates whose answer was lost, tasks given up while they may run. */
  readonly held: number;
  /** Rows of runs that are gone (killed, stopped): their creates in flight and tasks. */
  readonly deadRun: number;
  /** Of deadRun: tasks accepted (the ledger has them active: the next run polls them; `retry --held` has nothing to free). */
  readonly deadTasks: number;
  /** When the last of them stops counting; 0 when there is none. */
  readonly untilMs: number;
  /** The latest moment the oldest of their tasks could have started; Infinity when there is none. */
  readonly oldestSinceMs: number;
}

/** How a create's reservation ended, as the ledger recorded it. */
export type CreateOutcome =
  | { readonly kind: 'accepted'; readonly taskId: string }
  /** Outcome unknown: the task may be running. `ref` is the X-Request-Id sent; `resolvedMs` when the client gave up. */
  | { readonly kind: 'held'; readonly ref: string; readonly sentMs: number; readonly resolvedMs: number }
  /** Definitely not created (not sent, 429, 503, refused). */
  | { readonly kind: 'gone' }
  /** Nothing recorded (the stage failed): left as a create in flight. */
  | { readonly kind: 'unknown' };

/**
 * A key's task slots, machine-wide, as rows of its store: a create in flight takes a row
 * when its call is reserved (KeyBudget.reserve); the row becomes the running task, or a
 * held create that counts until its task could have ended, or is freed.
 */
export class KeySlots {
  /** The task bound this owner's rows were last given. */
  private appliedBound: number | undefined;

  constructor(
    private readonly cache: KeyCache,
    private readonly opts: KeyBudgetOptions,
  ) {}

  /**
   * Task slots in use on this key, machine-wide: creates in flight and running tasks of
   * live owners in full; held creates, and everything of owners that are gone, until
   * they expire (until then such a task could still hold a slot at the service).
   */
  inUse(now: number): number {
    this.cache.refresh(now);
    this.rebound();
    let n = 0;
    for (const r of this.cache.slotRows) if (this.counted(r, now)) n++;
    return n;
  }

  /**
   * Slots in use that a live process tracks: creates in flight and running tasks of live
   * owners (this run's among them). A probe may go while these leave a slot (KeyBudget.reserve).
   */
  certainInUse(now: number): number {
    this.cache.refresh(now);
    this.rebound();
    let n = 0;
    for (const r of this.cache.slotRows) if (this.counted(r, now) && this.certain(r, now)) n++;
    return n;
  }

  /** The counted slots no live process tracks (GuessedSlots). */
  guessed(now: number): GuessedSlots {
    this.cache.refresh(now);
    this.rebound();
    return guessedSlots(this.cache.slotRows, now, (r) => this.cache.live(r, now));
  }

  /**
   * When the slot count may next fall without an event of this process: a held or a dead
   * owner's row expiring; while another live process holds slots, a look in 2 s; while
   * this one's held creates count, a look in 5 s (the task bound they follow may shrink).
   */
  nextChangeAt(now: number): number {
    this.cache.refresh(now);
    this.rebound();
    let at = Infinity;
    for (const r of this.cache.slotRows) {
      if (!this.counted(r, now)) continue;
      if ((r.kind === 'create' || r.kind === 'active') && this.cache.live(r, now)) {
        if (r.owner !== this.opts.owner) at = Math.min(at, now + SLOT_RECHECK_MS);
      } else {
        at = Math.min(at, r.expires_ms, r.owner === this.opts.owner ? now + HELD_RECHECK_MS : Infinity);
      }
    }
    return at;
  }

  /** The row of a create reserved now, written to the store (inside the reservation's transaction). */
  insertCreate(now: number, itemId: number | undefined): SlotRow {
    // Its task may be accepted until the client gives up on the request.
    const since = now + callTimeoutMs(this.opts);
    const slot: NewSlot = { itemId: itemId ?? null, ref: null, kind: 'create', sinceMs: since, expiresMs: since + this.opts.taskBoundMs() };
    return this.cache.ownRow(this.cache.store.insertSlot(this.opts.owner, slot), slot);
  }

  /**
   * A create's outcome, for its slot row: running (active), held until the task could have
   * ended, or freed. A create accepted while the rows count more than the limit shows that
   * some guessed rows (held, or a gone run's) are not running (the service had a free
   * slot): as many as the excess are released, oldest first. In-flight creates of live
   * owners are left out of that count: they may not have arrived yet, and releasing too
   * little is the safe side.
   */
  createResolved(id: number | undefined, outcome: CreateOutcome, now: number): void {
    const cache = this.cache;
    if (id === undefined || outcome.kind === 'unknown') return;
    if (outcome.kind === 'gone') {
      cache.ownWrite(() => cache.store.deleteSlot(id));
      cache.dropRow(id);
      return;
    }
    const bound = this.opts.taskBoundMs(outcome.kind === 'held');
    this.appliedBound ??= bound;
    const isId = (r: SlotRow) => r.id === id;
    if (outcome.kind === 'held') {
      // Accepted, if at all, before the client gave up on it.
      const since = Math.min(outcome.resolvedMs, outcome.sentMs + callTimeoutMs(this.opts));
      cache.ownWrite(() => cache.store.setSlot(id, 'held', outcome.ref, since, since + bound));
      cache.updateRows(isId, () => ({ kind: 'held', ref: outcome.ref, since_ms: since, expires_ms: since + bound }));
      return;
    }
    cache.store.immediate(() => {
      cache.refresh(now, true);
      cache.ownWrite(() => {
        cache.store.setSlot(id, 'active', outcome.taskId, now, now + bound);
        cache.updateRows(isId, () => ({ kind: 'active', ref: outcome.taskId, since_ms: now, expires_ms: now + bound }));
        const counted = cache.slotRows.filter((r) => this.counted(r, now));
        const held = counted.filter((r) => !this.certain(r, now)).sort((a, b) => a.since_ms - b.since_ms || a.id - b.id);
        const excess =
          counted.filter((r) => r.kind === 'active' && this.certain(r, now)).length + held.length - this.opts.limits.activeTasks;
        if (excess > 0) {
          const ids = held.slice(0, excess).map((r) => r.id);
          cache.store.release(ids);
          const gone = new Set(ids);
          cache.updateRows(
            (r) => gone.has(r.id),
            () => ({ kind: 'released' }),
          );
        }
      });
    });
  }

  /**
   * One of this owner's tasks is given up while it may still run (held at the polling cap,
   * or its polls refused): the service still counts it, so its row stays, as a held one,
   * until the task could have ended — or until a create accepted beyond the limit shows it
   * is not running (createResolved).
   */
  taskGivenUp(taskId: string): void {
    const cache = this.cache;
    const mine = this.ownTask(taskId);
    if (mine.length === 0) return;
    const bound = this.opts.taskBoundMs(true);
    cache.ownWrite(() => {
      for (const r of mine) cache.store.setSlot(r.id, 'held', taskId, r.since_ms, r.since_ms + bound);
    });
    const ids = new Set(mine.map((r) => r.id));
    cache.updateRows(
      (r) => ids.has(r.id),
      (r) => ({ kind: 'held', expires_ms: r.since_ms + bound }),
    );
  }

  /** One of this owner's tasks reached an end: its slot is free. */
  taskEnded(taskId: string): void {
    const cache = this.cache;
    const mine = this.ownTask(taskId);
    if (mine.length === 0) return;
    cache.ownWrite(() => cache.store.deleteTaskSlot(this.opts.owner, taskId));
    for (const r of mine) cache.dropRow(r.id);
  }

  /**
   * While this owner holds slots it can only guess about (held creates), its rows follow
   * the task bound as tasks end and it is worked out again: a first guess of 10 min
   * shrinks to what the tasks really take.
   */
  private rebound(): void {
    const cache = this.cache;
    const own = (r: SlotRow) => r.owner === this.opts.owner;
    if (!cache.slotRows.some((r) => own(r) && r.kind === 'held')) return;
    const bound = this.opts.taskBoundMs(true);
    if (bound === this.appliedBound) return;
    this.appliedBound = bound;
    cache.ownWrite(() => cache.store.reboundOwner(this.opts.owner, bound));
    cache.updateRows(
      (r) => own(r) && r.kind !== 'released',
      (r) => ({ expires_ms: r.since_ms + bound }),
    );
  }

  /** This owner's row of a running task. */
  private ownTask(taskId: string): SlotRow[] {
    return this.cache.slotRows.filter((r) => r.owner === this.opts.owner && r.kind === 'active' && r.ref === taskId);
  }

  private counted(r: SlotRow, now: number): boolean {
    if (r.kind === 'released') return false;
    if (r.expires_ms > now) return true;
    return (r.kind === 'create' || r.kind === 'active') && this.cache.live(r, now);
  }

  /** A row a live process tracks: its create in flight or its running task. */
  private certain(r: SlotRow, now: number): boolean {
    return (r.kind === 'create' || r.kind === 'active') && this.cache.live(r, now);
  }
}

/**
 * The counted rows among `rows` that no live process tracks (GuessedSlots), for a run's
 * display and for `darkroom status`, which reads the store apart from any run.
 */
export function guessedSlots(rows: readonly SlotRow[], now: number, live: (r: SlotRow) => boolean): GuessedSlots {
  let held = 0;
  let deadRun = 0;
  let deadTasks = 0;
  let untilMs = 0;
  let oldestSinceMs = Infinity;
  for (const r of rows) {
    if (r.kind === 'released' || r.expires_ms <= now) continue;
    if (r.kind === 'held') held++;
    else if (!live(r)) {
      deadRun++;
      if (r.kind === 'active') deadTasks++;
    } else continue;
    untilMs = Math.max(untilMs, r.expires_ms);
    oldestSinceMs = Math.min(oldestSinceMs, r.since_ms);
  }
  return { held, deadRun, deadTasks, untilMs, oldestSinceMs };
}

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
