import type { CallRecord } from '../api/client.js';
import { clock } from '../clock.js';
import type { CallKind, KeyStore, NewSlot, SlotRow } from '../ledger/keystore.js';
import { ARRIVAL_MARGIN_MS, CallBudget } from './budget.js';
import { KeyBusyError, type Binding } from './keyBusy.js';
import { pidLiveness, thisProcess, type Liveness } from './owners.js';
import { Reservation, type ReserveKind } from './reservation.js';

export interface KeyLimits {
  readonly callsPerMinute: number;
  readonly callsPerHour: number;
  readonly activeTasks: number;
}

export interface KeyBudgetOptions {
  /** Whose rows these are: the ledger's id, or an account command's one-off id. */
  readonly owner: string;
  readonly limits: KeyLimits;
  /**
   * How long a task may run from its start (src/scheduler/taskBound.ts). `fresh`: the
   * caller holds slots it can only guess about and wants the latest observations.
   */
  readonly taskBoundMs: (fresh?: boolean) => number;
  /** The client's per-call timeout: a create may be accepted until its client gives up. Default 30 s. */
  readonly callTimeoutMs?: number;
  readonly marginMs?: number;
  /** Places in each window only creates may take (CallBudget). Default 3. */
  readonly createReserve?: number;
  /** Whether another owner's process still runs; default: by pid, on this host. */
  readonly liveness?: Liveness;
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

/** What a run's reconciliation puts in the store from its ledger. */
export interface LedgerFacts {
  /** The owner's slots as its ledger says: running tasks, held creates, orphan tasks. */
  readonly slots: readonly NewSlot[];
  /** Calls of the last hour the ledger recorded (a store that is new or was removed must count them). */
  readonly calls: readonly { atMs: number; kind: CallKind; sentRequestId: string; answeredMs: number; httpStatus: number | null; code: number | null }[];
  /** The key's pause as the ledger kept it (migrations/005). */
  readonly pausedUntil: number;
}

const REFRESH_MS = 100;
/** A request that leaves this much after its reservation is re-timed to when it left. */
const RETIME_MS = 100;
/** While another live process holds slots this key waits for, how often to look again. */
const SLOT_RECHECK_MS = 2000;
/** While this process's own held creates bind, how often to work their bound out again. */
const HELD_RECHECK_MS = 5000;
const PRUNE_EVERY_MS = 10 * 60_000;
/** Calls are kept a while past the hour window: for support questions, and the windows' margin. */
const KEEP_CALLS_MS = 2 * 3_600_000;

/**
 * One API key's budget as one process sees it: the rolling windows and the task slots of
 * every darkroom process using the key on this machine, kept in a KeyStore (issue 12).
 *
 * The windows are a CallBudget held in memory as a cache of the store: it is read again
 * whenever the store changed under it (another process's reservation, or another budget
 * sharing the connection), at most every 100 ms outside a reservation. A reservation
 * (`reserve`) is one BEGIN IMMEDIATE transaction: read again, check the windows (with the
 * arrival margin, the creates' reserve, the pause) and, for a create, the slots; write the
 * call row (and the create's slot row); commit. Only then may the request leave; the row
 * counts from then whether an answer ever comes or not.
 */
export class KeyBudget {
  readonly calls: CallBudget;
  private slotRows: SlotRow[] = [];
  private seen = '';
  private checkedAt = Number.NEGATIVE_INFINITY;
  private prunedAt: number;
  private readonly liveness: Liveness;
  /** The task bound this owner's rows were last given. */
  private appliedBound: number | undefined;

  constructor(
    readonly store: KeyStore,
    private readonly opts: KeyBudgetOptions,
    now = clock.now(),
  ) {
    this.calls = new CallBudget(opts.limits, [], opts.marginMs ?? ARRIVAL_MARGIN_MS, opts.createReserve ?? 3);
    this.liveness = opts.liveness ?? pidLiveness();
    this.prunedAt = now;
    this.refresh(now, true);
  }

  get owner(): string {
    return this.opts.owner;
  }

  get limits(): KeyLimits {
    return this.opts.limits;
  }

  // ---- the windows ------------------------------------------------------------------

  /** When the next call may leave (see CallBudget.availableAt), with what the store holds. */
  availableAt(now: number, create = false): number {
    this.refresh(now);
    return this.calls.availableAt(now, create);
  }

  hourHeadroom(now: number): number {
    this.refresh(now);
    return this.calls.hourHeadroom(now);
  }

  setPacing(on: boolean, now: number): void {
    this.calls.setPacing(on, now);
  }

  get pacing(): boolean {
    return this.calls.pacing;
  }

  unusedMs(now: number): number {
    return this.calls.unusedMs(now);
  }

  usage(now: number): { minute: number; hour: number } {
    this.refresh(now);
    return this.calls.usage(now);
  }

  /** Server feedback: no call before `untilMs`, for every process using the key. */
  pauseUntil(untilMs: number, now = clock.now()): void {
    this.calls.pauseUntil(untilMs);
    this.ownWrite(() => this.store.pause(untilMs, now));
  }

  /** What holds the next call back, if anything does now. */
  binding(now: number, create = false): Binding | undefined {
    this.refresh(now);
    const reserve = create ? 0 : (this.opts.createReserve ?? 3);
    const times: [Binding, number][] = [
      ['pause', this.calls.pausedUntilMs],
      ['hour', this.calls.hour.nextFreeAt(now, reserve)],
      ['minute', this.calls.minute.nextFreeAt(now, reserve)],
    ];
    let best: [Binding, number] | undefined;
    for (const t of times) if (t[1] > now && (!best || t[1] > best[1])) best = t;
    if (best) return best[0];
    return this.calls.availableAt(now, create) > now ? 'pace' : undefined;
  }

  /**
   * Reserve one call (and, for a create, one task slot) now, or undefined when there is no
   * room: another process took it since the caller looked. `slotLimit` is the lane's
   * current idea of the slots (lower after a 429 on api_key_active_tasks).
   */
  reserve(now: number, kind: ReserveKind, o: { itemId?: number; slotLimit?: number } = {}): Reservation | undefined {
    const create = kind === 'create';
    const ids = this.store.immediate(() => {
      this.refresh(now, true);
      if (this.calls.availableAt(now, create) > now) return undefined;
      if (create && this.slotsInUse(now) >= (o.slotLimit ?? this.opts.limits.activeTasks)) return undefined;
      return this.ownWrite(() => {
        const callId = this.store.insertCall(this.opts.owner, now, kind);
        if (!create) return { callId, slot: undefined };
        // Its task may be accepted until the client gives up on the request.
        const since = now + this.callTimeoutMs;
        const slot: NewSlot = { itemId: o.itemId ?? null, ref: null, kind: 'create', sinceMs: since, expiresMs: since + this.opts.taskBoundMs() };
        return { callId, slot: this.ownRow(this.store.insertSlot(this.opts.owner, slot), slot) };
      });
    });
    if (!ids) return undefined;
    this.calls.take(now);
    if (ids.slot) this.slotRows.push(ids.slot);
    this.maybePrune(now);
    return new Reservation(this, ids.callId, now, kind, ids.slot?.id);
  }

  /**
   * Reserve a call, waiting for room (account calls, the runner's own checks). `onWait` is
   * told once how long and why; a wait longer than `maxWaitMs` throws KeyBusyError instead.
   */
  async reserveWhenFree(
    kind: ReserveKind,
    o: { signal?: AbortSignal; maxWaitMs?: number; onWait?: (waitMs: number, binding: Binding) => void } = {},
  ): Promise<Reservation> {
    let told = false;
    for (;;) {
      const now = clock.now();
      const t = this.reserve(now, kind);
      if (t) return t;
      const at = Math.max(now + 1, this.availableAt(now, kind === 'create'));
      const binding = this.binding(now, kind === 'create') ?? 'minute';
      if (o.maxWaitMs !== undefined && at - now > o.maxWaitMs) throw new KeyBusyError(at, binding, at - now);
      if (!told) o.onWait?.(at - now, binding);
      told = true;
      await clock.sleep(at - now, o.signal);
    }
  }

  /** @internal The ticket's request is leaving. */
  sending(t: Reservation, atMs: number, sentRequestId: string): void {
    if (t.sentRequestId === undefined) {
      t.sentRequestId = sentRequestId;
      if (atMs - t.atMs > RETIME_MS) {
        // Prepared for a while (an upload read and converted): it counts from when it left,
        // which is when the service will count it.
        this.ownWrite(() => this.store.retimeCall(t.callId, atMs));
        this.calls.move(t.atMs, atMs);
        t.atMs = atMs;
      }
      return;
    }
    // A second call under one reservation: counted as it leaves, as it is leaving.
    const id = this.ownWrite(() => this.store.insertCall(this.opts.owner, atMs, t.kind));
    this.calls.take(atMs);
    t.extra.set(sentRequestId, { id, atMs });
  }

  /** @internal The ticket's call is over: its row is completed, and a 429's facts adopted. */
  answered(t: Reservation, rec: CallRecord): void {
    const main = rec.sentRequestId === t.sentRequestId;
    const extra = main ? undefined : t.extra.get(rec.sentRequestId);
    const id = main ? t.callId : extra?.id;
    const leftAt = main ? t.atMs : extra?.atMs;
    if (id === undefined || leftAt === undefined) return;
    const now = clock.now();
    // The service counted the call when it arrived, which may be long after it left on a
    // loaded machine (a slow event loop, a body read slowly): it counts from no earlier
    // than its answer less the margin. Its window [at, at + span + margin] then covers the
    // service's [arrival, arrival + span] whichever leg was slow. No answer at all: from now.
    const countFrom = Math.max(leftAt, rec.httpStatus === null ? now : now - this.calls.marginMs);
    this.ownWrite(() => {
      if (countFrom > leftAt) this.store.retimeCall(id, countFrom);
      this.store.completeCall(id, { sentRequestId: rec.sentRequestId, answeredMs: now, httpStatus: rec.httpStatus, code: rec.businessCode });
    });
    if (countFrom > leftAt) {
      this.calls.move(leftAt, countFrom);
      if (main) t.atMs = countFrom;
      else extra!.atMs = countFrom;
    }
    const scope = rec.rateLimit?.scope;
    if (rec.httpStatus === 429 && (scope === 'api_key_minute' || scope === 'api_key_hour')) {
      this.adoptRejection(scope === 'api_key_minute' ? 'api_key_minute' : 'api_key_hour', rec.rateLimit?.resetAtMs ?? null, rec.retryAfterMs, now);
    }
  }

  /** The dispatch under `t` is over. A reservation whose call never left is given back. */
  settle(t: Reservation): void {
    if (t.settled) return;
    t.settled = true;
    if (t.sentRequestId !== undefined) return;
    this.ownWrite(() => {
      this.store.deleteCall(t.callId);
      if (t.slotId !== undefined) this.store.deleteSlot(t.slotId);
    });
    this.calls.move(t.atMs, undefined);
    if (t.slotId !== undefined) this.dropRow(t.slotId);
  }

  // ---- the slots --------------------------------------------------------------------

  /**
   * Task slots in use on this key, machine-wide: creates in flight and running tasks of
   * live owners in full; held creates, and everything of owners that are gone, until
   * they expire (until then such a task could still hold a slot at the service).
   */
  slotsInUse(now: number): number {
    this.refresh(now);
    this.rebound();
    let n = 0;
    for (const r of this.slotRows) if (this.counted(r, now)) n++;
    return n;
  }

  /**
   * When the slot count may next fall without an event of this process: a held or a dead
   * owner's row expiring; while another live process holds slots, a look in 2 s; while
   * this one's held creates count, a look in 5 s (the task bound they follow may shrink).
   */
  nextSlotChangeAt(now: number): number {
    this.refresh(now);
    this.rebound();
    let at = Infinity;
    for (const r of this.slotRows) {
      if (!this.counted(r, now)) continue;
      if ((r.kind === 'create' || r.kind === 'active') && this.live(r, now)) {
        if (r.owner !== this.opts.owner) at = Math.min(at, now + SLOT_RECHECK_MS);
      } else {
        at = Math.min(at, r.expires_ms, r.owner === this.opts.owner ? now + HELD_RECHECK_MS : Infinity);
      }
    }
    return at;
  }

  /**
   * A create's outcome, for its slot row: running (active), held until the task could have
   * ended, or freed. A create accepted while the rows count more than the limit shows that
   * some held rows are not running (the service had a free slot): as many as the excess
   * are released, oldest first. In-flight creates of others are left out of that count:
   * they may not have arrived yet, and releasing too little is the safe side.
   */
  createResolved(t: Reservation, outcome: CreateOutcome, now = clock.now()): void {
    const id = t.slotId;
    if (id === undefined || outcome.kind === 'unknown') return;
    if (outcome.kind === 'gone') {
      this.ownWrite(() => this.store.deleteSlot(id));
      this.dropRow(id);
      return;
    }
    const bound = this.opts.taskBoundMs(outcome.kind === 'held');
    this.appliedBound ??= bound;
    if (outcome.kind === 'held') {
      // Accepted, if at all, before the client gave up on it.
      const since = Math.min(outcome.resolvedMs, outcome.sentMs + this.callTimeoutMs);
      this.ownWrite(() => this.store.setSlot(id, 'held', outcome.ref, since, since + bound));
      this.slotRows = this.slotRows.map((r): SlotRow => (r.id === id ? { ...r, kind: 'held', ref: outcome.ref, since_ms: since, expires_ms: since + bound } : r));
      return;
    }
    this.store.immediate(() => {
      this.refresh(now, true);
      this.ownWrite(() => {
        this.store.setSlot(id, 'active', outcome.taskId, now, now + bound);
        this.slotRows = this.slotRows.map((r): SlotRow => (r.id === id ? { ...r, kind: 'active', ref: outcome.taskId, since_ms: now, expires_ms: now + bound } : r));
        const counted = this.slotRows.filter((r) => this.counted(r, now));
        const held = counted.filter((r) => r.kind === 'held').sort((a, b) => a.since_ms - b.since_ms || a.id - b.id);
        const excess = counted.filter((r) => r.kind === 'active').length + held.length - this.opts.limits.activeTasks;
        if (excess > 0) {
          const ids = held.slice(0, excess).map((r) => r.id);
          this.store.release(ids);
          const gone = new Set(ids);
          this.slotRows = this.slotRows.map((r): SlotRow => (gone.has(r.id) ? { ...r, kind: 'released' } : r));
        }
      });
    });
  }

  /** One of this owner's tasks reached an end (or its polling gave up): its slot is free. */
  taskEnded(taskId: string): void {
    const mine = this.slotRows.filter((r) => r.owner === this.opts.owner && r.kind === 'active' && r.ref === taskId);
    if (mine.length === 0) return;
    this.ownWrite(() => this.store.deleteTaskSlot(this.opts.owner, taskId));
    for (const r of mine) this.dropRow(r.id);
  }

  // ---- what the service says about other clients of the key -------------------------

  /**
   * GET /usage: the service's own count of the key's calls. Calls it counts beyond ours
   * were made by other clients of the key (another machine): recorded as foreign calls at
   * now — the safe side, as they may be older — so every process here counts them. The
   * hour's surplus beyond the minute's counts in the hour window only. Figures are read
   * against the configured limits, the only ones known.
   */
  adoptUsage(u: { minuteRemaining: number; hourRemaining: number }, now = clock.now()): { minute: number; hour: number } {
    return this.store.immediate(() => {
      this.refresh(now, true);
      const { callsPerMinute, callsPerHour } = this.opts.limits;
      const minute = Math.max(0, callsPerMinute - u.minuteRemaining - this.calls.minute.count(now));
      const hour = Math.max(0, callsPerHour - u.hourRemaining - this.calls.hour.count(now) - minute);
      this.addForeign(minute, now, 'both');
      this.addForeign(hour, now, 'hour');
      return { minute, hour };
    });
  }

  /**
   * A 429 on the key's minute or hour window while ours shows room: other clients fill it.
   * Foreign calls fill our window up to its limit, placed so they leave it when the
   * service said the window resets (RateLimit-Reset, else Retry-After, else a whole span
   * from now). The pause itself goes through pauseUntil, as for any 429.
   */
  adoptRejection(scope: 'api_key_minute' | 'api_key_hour', resetAtMs: number | null, retryAfterMs: number | null, now = clock.now()): number {
    const minute = scope === 'api_key_minute';
    const span = minute ? 60_000 : 3_600_000;
    const until = resetAtMs ?? (retryAfterMs !== null ? now + retryAfterMs : now + span);
    if (until <= now) return 0;
    return this.store.immediate(() => {
      this.refresh(now, true);
      const w = minute ? this.calls.minute : this.calls.hour;
      const n = Math.max(0, w.limit - w.count(now));
      this.addForeign(n, Math.min(now, until - span), minute ? 'minute' : 'hour');
      return n;
    });
  }

  /**
   * Whether the service's own count was read lately (by any process here): a run started
   * again and again (a crash loop, a cron job) need not ask each time. Claims the
   * reading for `now` when it was not.
   */
  claimSeed(now: number, withinMs: number): boolean {
    return this.store.immediate(() => {
      const last = Number(this.store.getMeta('seeded_ms') ?? Number.NaN);
      if (last <= now && now - last < withinMs) return false;
      this.ownWrite(() => this.store.setMeta('seeded_ms', String(now)));
      return true;
    });
  }

  // ---- a run's own rows -------------------------------------------------------------

  /**
   * At the start of a run: this owner's rows are made what its ledger says (the slots of
   * a run killed or stopped before are otherwise stale), the ledger's recent calls the
   * store lacks are added, and its pause carried over.
   */
  reconcile(facts: LedgerFacts, now = clock.now(), proc = thisProcess()): void {
    this.store.immediate(() => {
      this.ownWrite(() => {
        this.store.registerOwner(this.opts.owner, proc.pid, proc.host, now);
        this.store.replaceOwnerSlots(this.opts.owner, facts.slots);
        for (const c of facts.calls) {
          this.store.importCall(this.opts.owner, c.atMs, c.kind, { sentRequestId: c.sentRequestId, answeredMs: c.answeredMs, httpStatus: c.httpStatus, code: c.code });
        }
        if (facts.pausedUntil > now) this.store.pause(facts.pausedUntil, now);
      });
      this.prune(now);
      this.reload(now);
      this.seen = this.store.version();
    });
  }

  // ---- internals --------------------------------------------------------------------

  private get callTimeoutMs(): number {
    return this.opts.callTimeoutMs ?? 30_000;
  }

  /**
   * While this owner holds slots it can only guess about (held creates), its rows follow
   * the task bound as tasks end and it is worked out again: a first guess of 10 min
   * shrinks to what the tasks really take.
   */
  private rebound(): void {
    if (!this.slotRows.some((r) => r.owner === this.opts.owner && r.kind === 'held')) return;
    const bound = this.opts.taskBoundMs(true);
    if (bound === this.appliedBound) return;
    this.appliedBound = bound;
    this.ownWrite(() => this.store.reboundOwner(this.opts.owner, bound));
    this.slotRows = this.slotRows.map((r): SlotRow =>
      r.owner === this.opts.owner && r.kind !== 'released' ? { ...r, expires_ms: r.since_ms + bound } : r,
    );
  }

  private addForeign(n: number, at: number, countsIn: 'both' | 'minute' | 'hour'): void {
    if (n <= 0) return;
    this.ownWrite(() => {
      for (let i = 0; i < n; i++) this.store.insertCall('foreign', at, 'foreign', countsIn);
    });
    for (let i = 0; i < n; i++) this.calls.record(at, { minute: countsIn !== 'hour', hour: countsIn !== 'minute' });
  }

  private counted(r: SlotRow, now: number): boolean {
    if (r.kind === 'released') return false;
    if (r.expires_ms > now) return true;
    return (r.kind === 'create' || r.kind === 'active') && this.live(r, now);
  }

  private live(r: SlotRow, now: number): boolean {
    if (r.owner === this.opts.owner) return true;
    return r.pid !== null && r.host !== null && this.liveness(r.pid, r.host, now);
  }

  private ownRow(id: number, s: NewSlot): SlotRow {
    return { id, owner: this.opts.owner, item_id: s.itemId, ref: s.ref, kind: s.kind, since_ms: s.sinceMs, expires_ms: s.expiresMs, pid: null, host: null };
  }

  private dropRow(id: number): void {
    this.slotRows = this.slotRows.filter((r) => r.id !== id);
  }

  /**
   * Read the store again if it changed: another process's commit (data_version), or a
   * write through the same connection by another budget. `force` inside a transaction.
   */
  private refresh(now: number, force = false): void {
    if (!force && now >= this.checkedAt && now - this.checkedAt < REFRESH_MS) return;
    this.checkedAt = now;
    const v = this.store.version();
    if (v === this.seen) return;
    this.reload(now);
    this.seen = v;
  }

  private reload(now: number): void {
    const rows = this.store.callsSince(now - this.calls.hour.spanMs);
    const minuteEdge = now - this.calls.minute.spanMs;
    const minute: number[] = [];
    const hour: number[] = [];
    for (const r of rows) {
      if (r.counts_in !== 'minute') hour.push(r.at_ms);
      if (r.counts_in !== 'hour' && r.at_ms > minuteEdge) minute.push(r.at_ms);
    }
    this.calls.resetWindows(minute, hour);
    this.calls.pauseUntil(this.store.pausedUntil());
    this.slotRows = this.store.slots();
  }

  /**
   * A write of this budget's own, reflected in its cache by the caller: the store's version
   * after it is one this budget has seen, unless someone else wrote first (then the next
   * refresh reads everything again).
   */
  private ownWrite<T>(fn: () => T): T {
    const fresh = this.store.version() === this.seen;
    const r = fn();
    if (fresh) this.seen = this.store.version();
    return r;
  }

  private maybePrune(now: number): void {
    if (now - this.prunedAt < PRUNE_EVERY_MS) return;
    this.store.immediate(() => this.prune(now));
  }

  private prune(now: number): void {
    this.prunedAt = now;
    const dead = [...new Set(this.slotRows.filter((r) => r.owner !== this.opts.owner && !this.live(r, now)).map((r) => r.owner))];
    this.ownWrite(() => this.store.prune(now, now - KEEP_CALLS_MS, dead));
    this.slotRows = this.slotRows.filter((r) => !(r.expires_ms <= now && (r.kind === 'held' || r.kind === 'released' || dead.includes(r.owner))));
  }
}
