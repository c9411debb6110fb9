import type { CallRecord, CallTicket } from '../../api/client.js';
import { clock } from '../../clock.js';
import type { KeyStore } from '../../keystore/store.js';
import type { CallKind, NewSlot } from '../../ledger/index.js';
import type { CallBudget } from './callBudget.js';
import { KeyCache, type KeyBudgetOptions, type KeyLimits, thisProcess } from './keyCache.js';
import { KeySlots, type CreateOutcome, type GuessedSlots } from './keySlots.js';
import { KeyWindows } from './keyWindows.js';
import { type Binding, KeyBusyError } from '../../errors.js';

export type { KeyLimits } from './keyCache.js';

/** What a run's reconciliation puts in the store from its ledger. */
export interface LedgerFacts {
  /** The owner's slots as its ledger says: running tasks, held creates, orphan tasks. */
  readonly slots: readonly NewSlot[];
  /** Calls of the last hour the ledger recorded (a store that is new or was removed must count them). */
  readonly calls: readonly {
    atMs: number;
    kind: CallKind;
    sentRequestId: string;
    answeredMs: number;
    httpStatus: number | null;
    code: number | null;
  }[];
  /** The key's pause as the ledger kept it (migrations/005). */
  readonly pausedUntil: number;
}

/** A request that leaves this much after its reservation is re-timed to when it left. */
const RETIME_MS = 100;

/**
 * One API key's budget as one process sees it: the rolling windows (keyWindows.ts) and
 * the task slots (keySlots.ts) of every darkroom process using the key on this machine,
 * kept in a KeyStore and copied in memory (keyCache.ts).
 *
 * This file is the reservation protocol. A reservation (`reserve`) is one BEGIN IMMEDIATE
 * transaction: read the store again, check the windows (with the arrival margin, the
 * creates' reserve, the pause) and, for a create, the slots; write the call row (and the
 * create's slot row); commit. Only then may the request leave; the row counts from then
 * whether an answer ever comes or not. The Reservation reports the call's sending and its
 * answer here, and `settle` ends it.
 */
export class KeyBudget implements ReservationBook {
  private readonly cache: KeyCache;
  private readonly windows: KeyWindows;
  private readonly slots: KeySlots;

  constructor(
    readonly store: KeyStore,
    private readonly opts: KeyBudgetOptions,
    now = clock.now(),
  ) {
    this.cache = new KeyCache(store, opts, now);
    this.windows = new KeyWindows(this.cache, opts);
    this.slots = new KeySlots(this.cache, opts);
  }

  get owner(): string {
    return this.opts.owner;
  }

  get limits(): KeyLimits {
    return this.opts.limits;
  }

  /** The windows as last read from the store. */
  get calls(): CallBudget {
    return this.cache.calls;
  }

  // ---- the windows (keyWindows.ts) ---------------------------------------------------

  /** When the next call may leave (see CallBudget.availableAt), with what the store holds. */
  availableAt(now: number, create = false): number {
    return this.windows.availableAt(now, create);
  }

  hourHeadroom(now: number): number {
    return this.windows.hourHeadroom(now);
  }

  usage(now: number): { minute: number; hour: number } {
    return this.windows.usage(now);
  }

  /** What holds the next call back, if anything does now. */
  binding(now: number, create = false): Binding | undefined {
    return this.windows.binding(now, create);
  }

  /** Server feedback: no call before `untilMs`, for every process using the key. */
  pauseUntil(untilMs: number, now = clock.now()): void {
    this.windows.pauseUntil(untilMs, now);
  }

  /** GET /usage: the service's count beyond ours is other clients' (KeyWindows.adoptUsage). */
  adoptUsage(u: { minuteRemaining: number; hourRemaining: number }, now = clock.now(), sentAtMs = now): { minute: number; hour: number } {
    return this.windows.adoptUsage(u, now, sentAtMs);
  }

  /** A 429 on api_key_active_tasks no row here explains: another client holds tasks (KeyWindows.adoptOthersTasks). */
  adoptOthersTasks(now = clock.now()): void {
    this.windows.adoptOthersTasks(now);
  }

  /** Whether the service's own count was read lately; claims the reading when not (KeyWindows.claimSeed). */
  claimSeed(now: number, withinMs: number): boolean {
    return this.windows.claimSeed(now, withinMs);
  }

  /** The machine's share of the key now (keyShare.ts; 1: the whole key), as the store last said. */
  shareAt(now: number): number {
    this.cache.refresh(now);
    return this.cache.calls.shareAt(now);
  }

  /** Hour pacing (CallBudget.setPacing): this process's own bucket, not the store's. */
  setPacing(on: boolean, now: number): void {
    this.cache.calls.setPacing(on, now);
  }

  get pacing(): boolean {
    return this.cache.calls.pacing;
  }

  unusedMs(now: number): number {
    return this.cache.calls.unusedMs(now);
  }

  // ---- the slots (keySlots.ts) -------------------------------------------------------

  /** Task slots in use on this key, machine-wide (KeySlots.inUse). */
  slotsInUse(now: number): number {
    return this.slots.inUse(now);
  }

  /** Task slots in use that a live process tracks (KeySlots.certainInUse): what a probe must leave room beside. */
  certainSlotsInUse(now: number): number {
    return this.slots.certainInUse(now);
  }

  /** Slots counted busy that no live process tracks: held creates, a gone run's (KeySlots.guessed). */
  guessedSlots(now: number): GuessedSlots {
    return this.slots.guessed(now);
  }

  /** When the slot count may next fall without an event of this process (KeySlots.nextChangeAt). */
  nextSlotChangeAt(now: number): number {
    return this.slots.nextChangeAt(now);
  }

  /** A create's outcome, for its slot row (KeySlots.createResolved). */
  createResolved(t: Reservation, outcome: CreateOutcome, now = clock.now()): void {
    this.slots.createResolved(t.slotId, outcome, now);
  }

  /** One of this owner's tasks reached an end: its slot is free. */
  taskEnded(taskId: string): void {
    this.slots.taskEnded(taskId);
  }

  /** One of this owner's tasks is given up while it may still run: its slot stays held (KeySlots.taskGivenUp). */
  taskGivenUp(taskId: string): void {
    this.slots.taskGivenUp(taskId);
  }

  // ---- reservations ------------------------------------------------------------------

  /**
   * Reserve one call (and, for a create, one task slot) now, or undefined when there is no
   * room: another process took it since the caller looked. `slotLimit` is the lane's
   * current idea of the slots (lower after a 429 on api_key_active_tasks).
   *
   * `probe`: a create into a slot counted busy only by rows no live process tracks (held
   * creates, a gone run's): the service, not a guess, says whether it is free. It needs
   * room beside the slots live processes track, never beside a guess; an accepted probe
   * releases a guessed row (KeySlots.createResolved), a refused one costs a call, no credit.
   */
  reserve(now: number, kind: ReserveKind, o: { itemId?: number; slotLimit?: number; probe?: boolean } = {}): Reservation | undefined {
    const cache = this.cache;
    const create = kind === 'create';
    const ids = this.store.immediate(() => {
      cache.refresh(now, true);
      if (cache.calls.availableAt(now, create) > now) return undefined;
      const inUse = o.probe ? this.slots.certainInUse(now) : this.slots.inUse(now);
      if (create && inUse >= (o.slotLimit ?? this.opts.limits.activeTasks)) return undefined;
      return cache.ownWrite(() => {
        const callId = this.store.insertCall(this.opts.owner, now, kind);
        return { callId, slot: create ? this.slots.insertCreate(now, o.itemId) : undefined };
      });
    });
    if (!ids) return undefined;
    cache.calls.take(now);
    if (ids.slot) cache.slotRows.push(ids.slot);
    cache.maybePrune(now);
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
    const cache = this.cache;
    if (t.sentRequestId === undefined) {
      t.sentRequestId = sentRequestId;
      if (atMs - t.atMs > RETIME_MS) {
        // Prepared for a while (an upload read and converted): it counts from when it left,
        // which is when the service will count it.
        cache.ownWrite(() => this.store.retimeCall(t.callId, atMs));
        cache.calls.move(t.atMs, atMs);
        t.atMs = atMs;
      }
      return;
    }
    // A second call under one reservation: counted as it leaves, as it is leaving.
    const id = cache.ownWrite(() => this.store.insertCall(this.opts.owner, atMs, t.kind));
    cache.calls.take(atMs);
    t.extra.set(sentRequestId, { id, atMs });
  }

  /** @internal The ticket's call is over: its row is completed, and a 429's facts adopted. */
  answered(t: Reservation, rec: CallRecord): void {
    const cache = this.cache;
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
    const countFrom = Math.max(leftAt, rec.httpStatus === null ? now : now - cache.calls.marginMs);
    cache.ownWrite(() => {
      if (countFrom > leftAt) this.store.retimeCall(id, countFrom);
      this.store.completeCall(id, {
        sentRequestId: rec.sentRequestId,
        answeredMs: now,
        httpStatus: rec.httpStatus,
        code: rec.businessCode,
      });
    });
    if (countFrom > leftAt) {
      cache.calls.move(leftAt, countFrom);
      if (main) t.atMs = countFrom;
      else extra!.atMs = countFrom;
    }
    const scope = rec.rateLimit?.scope;
    if (rec.httpStatus === 429 && (scope === 'api_key_minute' || scope === 'api_key_hour')) {
      this.windows.adoptRejection(
        scope === 'api_key_minute' ? 'api_key_minute' : 'api_key_hour',
        rec.rateLimit?.resetAtMs ?? null,
        rec.retryAfterMs,
        now,
      );
    }
  }

  /** The dispatch under `t` is over. A reservation whose call never left is given back. */
  settle(t: Reservation): void {
    if (t.settled) return;
    t.settled = true;
    if (t.sentRequestId !== undefined) return;
    const cache = this.cache;
    cache.ownWrite(() => {
      this.store.deleteCall(t.callId);
      if (t.slotId !== undefined) this.store.deleteSlot(t.slotId);
    });
    cache.calls.move(t.atMs, undefined);
    if (t.slotId !== undefined) cache.dropRow(t.slotId);
  }

  // ---- a run's own rows -------------------------------------------------------------

  /**
   * At the start of a run: this owner's rows are made what its ledger says (the slots of
   * a run killed or stopped before are otherwise stale), the ledger's recent calls the
   * store lacks are added, and its pause carried over.
   */
  reconcile(facts: LedgerFacts, now = clock.now(), proc = thisProcess()): void {
    const cache = this.cache;
    this.store.immediate(() => {
      cache.ownWrite(() => {
        this.store.registerOwner(this.opts.owner, proc.pid, proc.host, now);
        this.store.replaceOwnerSlots(this.opts.owner, facts.slots);
        for (const c of facts.calls) {
          this.store.importCall(this.opts.owner, c.atMs, c.kind, {
            sentRequestId: c.sentRequestId,
            answeredMs: c.answeredMs,
            httpStatus: c.httpStatus,
            code: c.code,
          });
        }
        if (facts.pausedUntil > now) this.store.pause(facts.pausedUntil, now);
      });
      cache.prune(now);
      cache.resync(now);
    });
  }
}

export type ReserveKind = Exclude<CallKind, 'foreign'>;

/** Where a reservation reports its call (KeyBudget: it records them in the key's store). */
export interface ReservationBook {
  sending(t: Reservation, atMs: number, sentRequestId: string): void;
  answered(t: Reservation, rec: CallRecord): void;
}

/** One call's reservation (CallTicket): the client reports its sending and its answer. */
export class Reservation implements CallTicket {
  sentRequestId: string | undefined;
  settled = false;
  /** Calls beyond the first made under this reservation (a stage should make one). */
  readonly extra = new Map<string, { id: number; atMs: number }>();

  constructor(
    private readonly budget: ReservationBook,
    readonly callId: number,
    public atMs: number,
    readonly kind: ReserveKind,
    readonly slotId: number | undefined,
  ) {}

  get sent(): boolean {
    return this.sentRequestId !== undefined;
  }

  sending(atMs: number, _endpoint: string, sentRequestId: string): void {
    this.budget.sending(this, atMs, sentRequestId);
  }

  answered(rec: CallRecord): void {
    this.budget.answered(this, rec);
  }
}
