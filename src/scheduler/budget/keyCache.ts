import { clock } from '../../clock.js';
import type { KeyStore, SlotRow } from '../../keystore/store.js';
import type { NewSlot } from '../../ledger/index.js';
import { ARRIVAL_MARGIN_MS, CallBudget } from './callBudget.js';
import { parseShare, type ShareState } from './keyShare.js';
import { hostname } from 'node:os';

/** How often (clock time) the windows and slots are compared with the store outside a reservation. */
const REFRESH_MS = 100;
/** The owner of calls other clients of the key made, as the service showed them. */
const FOREIGN = 'foreign';
/** Where the store keeps the machine's share of the key (keyShare.ts). */
const SHARE_META = 'share';
const PRUNE_EVERY_MS = 10 * 60_000;
/** Calls are kept a while past the hour window: for support questions, and the windows' margin. */
const KEEP_CALLS_MS = 2 * 3_600_000;

/**
 * One process's copy of a key's store (KeyStore, machine-wide): the calls as a CallBudget,
 * the slot rows as read. It is read again whenever the store changed under it (another
 * process's reservation, or another budget sharing the connection), at most every 100 ms
 * outside a transaction; this process's own writes go through `ownWrite` and are put in
 * the copy by their caller.
 */
export class KeyCache {
  readonly calls: CallBudget;
  slotRows: SlotRow[] = [];
  private seen = '';
  private checkedAt = Number.NEGATIVE_INFINITY;
  private prunedAt: number;
  private readonly liveness: Liveness;

  constructor(
    readonly store: KeyStore,
    private readonly opts: KeyBudgetOptions,
    now = clock.now(),
  ) {
    this.calls = new CallBudget(opts.limits, [], opts.marginMs ?? ARRIVAL_MARGIN_MS, createReserve(opts));
    this.liveness = opts.liveness ?? pidLiveness();
    this.prunedAt = now;
    this.refresh(now, true);
  }

  get owner(): string {
    return this.opts.owner;
  }

  /**
   * Read the store again if it changed: another process's commit (data_version), or a
   * write through the same connection by another budget. `force` inside a transaction.
   */
  refresh(now: number, force = false): void {
    if (!force && now >= this.checkedAt && now - this.checkedAt < REFRESH_MS) return;
    this.checkedAt = now;
    const v = this.store.version();
    if (v === this.seen) return;
    this.reload(now);
    this.seen = v;
  }

  /** Read everything again, whatever changed (after a run's reconciliation rewrote its rows). */
  resync(now: number): void {
    // The version first: a commit landing during the reads is read again next time.
    const v = this.store.version();
    this.reload(now);
    this.seen = v;
  }

  /**
   * A write of this process's own, reflected in the copy by the caller: the store's version
   * after it is one this copy has seen, unless someone else wrote first (then the next
   * refresh reads everything again). The version is read before the write inside one
   * write transaction with it (a savepoint inside the caller's): a write outside one would
   * wait for the lock while another process commits, and that commit, taken for this
   * process's own, would never be read (its creates not counted: a fourth task sent).
   */
  ownWrite<T>(fn: () => T): T {
    return this.store.immediate(() => {
      const fresh = this.store.version() === this.seen;
      const r = fn();
      if (fresh) this.seen = this.store.version();
      return r;
    });
  }

  /** Whether a row's owner still runs (this owner always does). */
  live(r: SlotRow, now: number): boolean {
    if (r.owner === this.opts.owner) return true;
    return r.pid !== null && r.host !== null && this.liveness(r.pid, r.host, now);
  }

  /** `n` calls of other clients of the key at `at`, counted in these windows. */
  addForeign(n: number, at: number, countsIn: 'both' | 'minute' | 'hour'): void {
    if (n <= 0) return;
    this.ownWrite(() => {
      for (let i = 0; i < n; i++) this.store.insertCall(FOREIGN, at, 'foreign', countsIn);
    });
    for (let i = 0; i < n; i++) this.calls.record(at, { minute: countsIn !== 'hour', hour: countsIn !== 'minute' });
  }

  /** The machine's share of the key (keyShare.ts), for every process here: written, and taken into the copy. */
  setShare(s: ShareState): void {
    this.ownWrite(() => this.store.setMeta(SHARE_META, JSON.stringify(s)));
    this.calls.setShare(s);
  }

  /** A slot row this owner just inserted, as the store would read it back. */
  ownRow(id: number, s: NewSlot): SlotRow {
    return {
      id,
      owner: this.opts.owner,
      item_id: s.itemId,
      ref: s.ref,
      kind: s.kind,
      since_ms: s.sinceMs,
      expires_ms: s.expiresMs,
      pid: null,
      host: null,
    };
  }

  /** The slot rows `match` picks, changed by `change`. */
  updateRows(match: (r: SlotRow) => boolean, change: (r: SlotRow) => Partial<SlotRow>): void {
    this.slotRows = this.slotRows.map((r): SlotRow => (match(r) ? { ...r, ...change(r) } : r));
  }

  dropRow(id: number): void {
    this.slotRows = this.slotRows.filter((r) => r.id !== id);
  }

  maybePrune(now: number): void {
    if (now - this.prunedAt < PRUNE_EVERY_MS) return;
    this.store.immediate(() => this.prune(now));
  }

  /** Old calls, expired rows that count no more, and owners that are gone leave the store. */
  prune(now: number): void {
    this.prunedAt = now;
    const dead = [...new Set(this.slotRows.filter((r) => r.owner !== this.opts.owner && !this.live(r, now)).map((r) => r.owner))];
    this.ownWrite(() => this.store.prune(now, now - KEEP_CALLS_MS, dead));
    this.slotRows = this.slotRows.filter(
      (r) => !(r.expires_ms <= now && (r.kind === 'held' || r.kind === 'released' || dead.includes(r.owner))),
    );
  }

  private reload(now: number): void {
    const rows = this.store.callsSince(now - this.calls.hour.spanMs);
    const minuteEdge = now - this.calls.minute.spanMs;
    const minute: number[] = [];
    const hour: number[] = [];
    const own: number[] = [];
    for (const r of rows) {
      if (r.counts_in !== 'minute') hour.push(r.at_ms);
      if (r.counts_in !== 'hour' && r.at_ms > minuteEdge) {
        minute.push(r.at_ms);
        if (r.owner !== FOREIGN) own.push(r.at_ms);
      }
    }
    this.calls.resetWindows(minute, hour, own);
    this.calls.pauseUntil(this.store.pausedUntil());
    this.calls.setShare(parseShare(this.store.getMeta(SHARE_META)));
    this.slotRows = this.store.slots();
  }
}

/* What a key's budget (keyBudget.ts) is told, shared by the parts it is made of. */

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
   * How long a task may run from its start (keySlots.ts taskBoundMs). `fresh`: the
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

/** A create may be accepted until its client gives up on the request. */
export const callTimeoutMs = (o: KeyBudgetOptions): number => o.callTimeoutMs ?? 30_000;

/** Places in each window only creates may take. */
export const createReserve = (o: KeyBudgetOptions): number => o.createReserve ?? 3;

/** Whether the process that owns key-store rows is still running. */
export type Liveness = (pid: number, host: string, now: number) => boolean;

/** This process, as key-store rows name their owner's process. */
export function thisProcess(): { pid: number; host: string } {
  return { pid: process.pid, host: hostname() };
}

/**
 * Liveness of processes on this machine by pid (signal 0 sends nothing; EPERM means it
 * exists under another user). A process on another host cannot be asked: its rows are
 * treated as an owner that is gone, which counts them until they expire — the safe side.
 *
 * A pid reused by an unrelated process makes a dead owner look alive, so its rows count
 * in full until a run of its ledger reconciles them; the cost is slots waited for, never a
 * limit broken. Answers are kept for `ttlMs`: the slot count asks on every pick.
 */
export function pidLiveness(ttlMs = 2000): Liveness {
  const me = hostname();
  const seen = new Map<number, { alive: boolean; at: number }>();
  return (pid, host, now) => {
    if (host !== me) return false;
    if (pid === process.pid) return true;
    const c = seen.get(pid);
    if (c && now - c.at < ttlMs && now >= c.at) return c.alive;
    let alive: boolean;
    try {
      process.kill(pid, 0);
      alive = true;
    } catch (err) {
      alive = (err as { code?: string }).code === 'EPERM';
    }
    seen.set(pid, { alive, at: now });
    return alive;
  };
}
