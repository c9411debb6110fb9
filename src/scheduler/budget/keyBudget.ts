import type { CallRecord, CallTicket } from '../../api/client.js';
import { clock } from '../../clock.js';
import type { KeyStore } from '../../keystore/store.js';
import type { CallKind, NewSlot } from '../../ledger/index.js';
import type { CallBudget } from './callBudget.js';
import { createReserve, KeyCache, type KeyBudgetOptions, type KeyLimits, thisProcess } from './keyCache.js';
import { KeySlots } from './keySlots.js';
import { shareAfterRefusal, shareFromUsage } from './keyShare.js';
import { MINUTE_MS } from '../../spec/window.js';
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
 * One API key's budget as one process sees it: the rolling call windows and pause
 * (`windows`, a CallBudget) and the task slots (`slots`, keySlots.ts) of every darkroom
 * process using the key on this machine, kept in a KeyStore and copied in memory
 * (keyCache.ts), with what the service says of the key's other clients (another machine)
 * added to the windows as foreign calls (keyShare.ts: this machine's share of the key).
 * Read them directly: nothing here forwards.
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
  /** The key's task slots, tracked and guessed (keySlots.ts). */
  readonly slots: KeySlots;

  constructor(
    readonly store: KeyStore,
    private readonly opts: KeyBudgetOptions,
    now = clock.now(),
  ) {
    this.cache = new KeyCache(store, opts, now);
    this.slots = new KeySlots(this.cache, opts);
  }

  get owner(): string {
    return this.opts.owner;
  }

  get limits(): KeyLimits {
    return this.opts.limits;
  }

  /** The call windows as last read from the store (CallBudget): this process's pacing and kept places are set here. */
  get windows(): CallBudget {
    return this.cache.calls;
  }

  /** The call windows as the store has them now: read again when another process (or budget) wrote since, at most every 100 ms. */
  windowsAt(now: number): CallBudget {
    this.cache.refresh(now);
    return this.cache.calls;
  }

  /** What holds the next call back, if anything does now. */
  binding(now: number, create = false): Binding | undefined {
    const calls = this.windowsAt(now);
    const reserve = create ? 0 : createReserve(this.opts);
    const times: [Binding, number][] = [
      ['pause', calls.pausedUntilMs],
      ['hour', calls.hour.nextFreeAt(now, reserve)],
      ['minute', calls.minute.nextFreeAt(now, reserve)],
    ];
    let best: [Binding, number] | undefined;
    for (const t of times) if (t[1] > now && (!best || t[1] > best[1])) best = t;
    if (best) return best[0];
    return calls.availableAt(now, create) > now ? 'pace' : undefined;
  }

  /** Server feedback: no call before `untilMs`, for every process using the key. */
  pauseUntil(untilMs: number, now = clock.now()): void {
    this.cache.calls.pauseUntil(untilMs);
    this.cache.ownWrite(() => this.store.pause(untilMs, now));
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
   * One call made outside a lane (account calls, the run's usage reading): reserved when the
   * windows have room, made under its reservation (`call`), settled. `onWait` is told once
   * how long and why it waits; a wait longer than `maxWaitMs` throws KeyBusyError instead.
   */
  async call<T>(
    kind: ReserveKind,
    o: { signal?: AbortSignal; maxWaitMs?: number; onWait?: (waitMs: number, binding: Binding) => void },
    call: (ticket: Reservation) => Promise<T>,
  ): Promise<T> {
    const ticket = await this.reserveWhenFree(kind, o);
    try {
      return await call(ticket);
    } finally {
      this.settle(ticket);
    }
  }

  private async reserveWhenFree(
    kind: ReserveKind,
    o: { signal?: AbortSignal; maxWaitMs?: number; onWait?: (waitMs: number, binding: Binding) => void },
  ): Promise<Reservation> {
    let told = false;
    for (;;) {
      const now = clock.now();
      const t = this.reserve(now, kind);
      if (t) return t;
      const at = Math.max(now + 1, this.windowsAt(now).availableAt(now, kind === 'create'));
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
      this.adoptRejection(
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

  // ---- the service's word on the key's other clients (keyShare.ts) ---------------------

  /**
   * GET /usage: the service's own count of the key's calls. Calls it counts beyond ours
   * were made by other clients of the key (another machine): recorded as foreign calls at
   * now — the safe side, as they may be older — so every process here counts them. The
   * hour's surplus beyond the minute's counts in the hour window only. Figures are read
   * against the configured limits, the only ones known.
   *
   * Ours are counted as the service surely counted them: made within its own minute before
   * the reading (`sentAtMs`, when GET /usage left), not the wider window this machine keeps
   * for its margin, nor calls that left while the reading was on its way. Counted in the
   * wider window, a minute's first calls that the service had already forgotten hid as many
   * of the others' (5 calls of another machine were read as none, and its share became the
   * whole key: 7 calls in 50 ms at the window's reset).
   */
  adoptUsage(u: { minuteRemaining: number; hourRemaining: number }, now = clock.now(), sentAtMs = now): { minute: number; hour: number } {
    const cache = this.cache;
    return this.store.immediate(() => {
      cache.refresh(now, true);
      const { callsPerMinute, callsPerHour } = this.opts.limits;
      const after = now - MINUTE_MS;
      const upTo = Math.min(now, sentAtMs);
      // Under a share already, the share is what keeps this machine to its part: the others'
      // calls of the last minute, put down at now, would shut the window for a minute more
      // after they were made (a machine whose partner had finished waited 40 s of each minute).
      const shared = cache.calls.shareAt(now) < 1;
      const ours = cache.calls.own.countBetween(now, after, upTo);
      const othersKnown = cache.calls.minute.count(now) - cache.calls.own.count(now);
      const minute = shared ? 0 : Math.max(0, callsPerMinute - u.minuteRemaining - ours - othersKnown);
      const hour = Math.max(0, callsPerHour - u.hourRemaining - cache.calls.hour.count(now) - minute);
      cache.addForeign(minute, now, 'both');
      cache.addForeign(hour, now, 'hour');
      // Others' calls of the last minute, as the service counts them, whatever this machine
      // had already put down to them: the share follows (keyShare.ts).
      const others = Math.max(0, callsPerMinute - u.minuteRemaining - ours);
      const share = shareFromUsage(cache.calls.shareState, others / callsPerMinute, now);
      if (share) cache.setShare(share);
      return { minute, hour };
    });
  }

  /**
   * A 429 on api_key_active_tasks that no slot row here explains (a create into a slot this
   * machine counted free, held and gone runs' rows included): another client of the key
   * holds tasks, so it spends the key's calls too. The share falls as on a window's 429
   * (keyShare.ts), before the window is found full: two machines that each spent their
   * windows whole met at every reset, 8 to 12 calls within 2 s.
   */
  adoptOthersTasks(now = clock.now()): void {
    const cache = this.cache;
    this.store.immediate(() => {
      cache.refresh(now, true);
      this.shareFalls(cache.calls.ownSpent(now), now);
    });
  }

  /** Another client shows itself: the share falls from what this machine spent (keyShare.ts). Inside the store's transaction. */
  private shareFalls(spent: number, now: number): void {
    const share = shareAfterRefusal(this.cache.calls.shareState, spent, now);
    if (share) this.cache.setShare(share);
  }

  /**
   * A 429 on the key's minute or hour window while ours shows room: other clients fill it.
   * Foreign calls fill our window up to its limit, placed so they leave it when the
   * service said the window resets (RateLimit-Reset, else Retry-After, else a whole span
   * from now), and the machine's share of the key falls (keyShare.ts). The pause itself
   * goes through pauseUntil, as for any 429.
   */
  private adoptRejection(
    scope: 'api_key_minute' | 'api_key_hour',
    resetAtMs: number | null,
    retryAfterMs: number | null,
    now: number,
  ): number {
    const cache = this.cache;
    const minute = scope === 'api_key_minute';
    const span = minute ? 60_000 : 3_600_000;
    const until = resetAtMs ?? (retryAfterMs !== null ? now + retryAfterMs : now + span);
    if (until <= now) return 0;
    return this.store.immediate(() => {
      cache.refresh(now, true);
      const calls = cache.calls;
      const w = minute ? calls.minute : calls.hour;
      const n = Math.max(0, w.limit - w.count(now));
      if (n > 0) {
        // What this machine spent of the window that crowded: of the minute at its own rate,
        // and of the hour as that rate would spend it.
        const spent = calls.ownSpent(now) * (minute ? 1 : (calls.minute.limit * 60) / w.limit);
        this.shareFalls(spent, now);
      }
      cache.addForeign(n, Math.min(now, until - span), minute ? 'minute' : 'hour');
      return n;
    });
  }

  /**
   * Whether the service's own count was read lately (by any process here): a run started
   * again and again (a crash loop, a cron job) need not ask each time. Claims the
   * reading for `now` when it was not.
   */
  claimSeed(now: number, withinMs: number): boolean {
    const cache = this.cache;
    return this.store.immediate(() => {
      const last = Number(this.store.getMeta('seeded_ms') ?? Number.NaN);
      if (last <= now && now - last < withinMs) return false;
      cache.ownWrite(() => this.store.setMeta('seeded_ms', String(now)));
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
