import path from 'node:path';
import Database from 'better-sqlite3';
import {
  KEYSTORE_MIGRATIONS_DIR,
  migrate,
  readMigrations,
  type Migration,
  openWritable,
  type WritableOptions,
} from '../ledger/sqliteFile.js';
import { stmt } from '../ledger/statements.js';
import type { CallKind, CountsIn, NewSlot, SlotKind } from '../ledger/calls.js';
import { KeyStoreError, NetworkFsError, NotSqliteFileError, type SqliteFileRole } from '../errors.js';

export interface StoredCall {
  readonly at_ms: number;
  readonly counts_in: CountsIn;
  /** The ledger's id, an account command's, or 'foreign' (another client of the key, seen from the service). */
  readonly owner: string;
}

export interface SlotRow {
  readonly id: number;
  readonly owner: string;
  readonly item_id: number | null;
  readonly ref: string | null;
  readonly kind: SlotKind;
  readonly since_ms: number;
  readonly expires_ms: number;
  /** The owner's process, when it registered (a run does; rows of an unregistered owner count until they expire). */
  readonly pid: number | null;
  readonly host: string | null;
}

export interface CallAnswer {
  readonly sentRequestId: string;
  readonly answeredMs: number;
  readonly httpStatus: number | null;
  readonly code: number | null;
}

const SELECT_SLOTS =
  'SELECT s.id, s.owner, s.item_id, s.ref, s.kind, s.since_ms, s.expires_ms, o.pid, o.host FROM slots s LEFT JOIN owners o ON o.owner = s.owner ORDER BY s.id';

/** Fingerprints are `k_` and 12 hex digits (src/spec/key.ts): safe as a file name, and never the key. */
const FINGERPRINT = /^k_[0-9a-f]{12}$/;

/** The state folder is the user's alone (0700) when darkroom makes it. */
const KEY_STORE_FILE: SqliteFileRole = {
  name: 'key store',
  fix: 'move it away, or set DARKROOM_STATE_DIR to another folder',
  localFix: 'set DARKROOM_STATE_DIR to a local folder',
  dirMode: 0o700,
};

let migrations: Migration[] | undefined;

/**
 * One API key's machine-wide store: the calls every darkroom process made with
 * the key, written before each is sent; the key's task slots; the pause the service asked
 * for. A small SQLite file per key in the user's state folder, or `:memory:` for
 * simulations. Only this module runs its SQL; what the rows mean for the windows and the
 * slots is src/scheduler/budget/'s (keyBudget.ts, keySlots.ts).
 *
 * Over 300 lines on purpose: one method per statement over the store's file, so every write
 * another process can race with is in one place, next to the transaction it runs in.
 */
export class KeyStore {
  /** Writes through this object, so several budgets sharing one connection see each other's. */
  private writes = 0;
  private readonly dataVersion: Database.Statement<[], number>;
  private readonly immediateRun: Database.Transaction<(fn: () => unknown) => unknown>;

  private constructor(
    readonly file: string,
    private readonly db: Database.Database,
    /** The network file system it is on, when the job allowed one (rollback journal, not WAL); else null. */
    readonly networkFs: string | null = null,
  ) {
    this.dataVersion = db.prepare<[], number>('PRAGMA data_version').pluck();
    this.immediateRun = db.transaction((fn: () => unknown) => fn());
  }

  /** The store of the key with this fingerprint in `dir` (created 0700, the file 0600). */
  static openFor(dir: string, keyFp: string, opts: WritableOptions = {}): KeyStore {
    return KeyStore.open(KeyStore.fileFor(dir, keyFp), opts);
  }

  static fileFor(dir: string, keyFp: string): string {
    if (!FINGERPRINT.test(keyFp)) throw new Error(`not a key fingerprint: ${JSON.stringify(keyFp)}`);
    return path.join(dir, `${keyFp}.db`);
  }

  /**
   * Opened as sqliteFile.ts opens every file darkroom writes: synchronous=FULL matters here
   * too, so a reservation committed before a request left survives a power cut (the point
   * of writing it first).
   */
  static open(file: string, opts: WritableOptions = {}): KeyStore {
    let db: Database.Database | undefined;
    try {
      const opened = openWritable(file, KEY_STORE_FILE, opts);
      db = opened.db;
      migrate(db, file, (migrations ??= readMigrations(KEYSTORE_MIGRATIONS_DIR)), 'the key store');
      return new KeyStore(file, db, opened.networkFs);
    } catch (err) {
      db?.close();
      if (err instanceof NotSqliteFileError || err instanceof NetworkFsError || (err as { code?: string }).code === 'LEDGER_TOO_NEW')
        throw err;
      throw new KeyStoreError(file, err);
    }
  }

  /**
   * The slot rows of the key's store in `dir`, read only (for `darkroom status`, beside a
   * run): nothing is made, migrated or locked for writing. Undefined when there is no store
   * yet or it cannot be read: a status never fails for it.
   */
  static peekSlots(dir: string, keyFp: string): SlotRow[] | undefined {
    let db: Database.Database | undefined;
    try {
      db = new Database(KeyStore.fileFor(dir, keyFp), { readonly: true, fileMustExist: true });
      db.pragma('busy_timeout = 1000');
      return stmt<[], SlotRow>(db, SELECT_SLOTS).all();
    } catch {
      return undefined;
    } finally {
      db?.close();
    }
  }

  /**
   * The calls of the key's store in `dir` after `sinceMs`, read only as peekSlots reads the
   * slots (for `status`, the live display and `plan`: the key's whole use, other jobs' and
   * other clients' too); undefined when there is no store yet or it cannot be read.
   */
  static peekCalls(dir: string, keyFp: string, sinceMs: number): StoredCall[] | undefined {
    let db: Database.Database | undefined;
    try {
      db = new Database(KeyStore.fileFor(dir, keyFp), { readonly: true, fileMustExist: true });
      db.pragma('busy_timeout = 1000');
      return stmt<[number], StoredCall>(db, 'SELECT at_ms, counts_in, owner FROM calls WHERE at_ms > ? ORDER BY at_ms').all(sinceMs);
    } catch {
      return undefined;
    } finally {
      db?.close();
    }
  }

  close(): void {
    if (this.db.open) this.db.close();
  }

  /**
   * Changes since a caller last looked: commits by other connections (data_version) and
   * writes by other users of this one. Compare with the value read after one's own writes.
   */
  version(): string {
    return `${this.dataVersion.get()}.${this.writes}`;
  }

  /** `fn` in a write transaction taken at once (BEGIN IMMEDIATE): no one else writes between its reads and its writes. */
  immediate<T>(fn: () => T): T {
    return this.immediateRun.immediate(fn) as T;
  }

  // ---- calls -------------------------------------------------------------------------

  callsSince(sinceMs: number): StoredCall[] {
    return stmt<[number], StoredCall>(this.db, 'SELECT at_ms, counts_in, owner FROM calls WHERE at_ms > ? ORDER BY at_ms').all(sinceMs);
  }

  insertCall(owner: string, atMs: number, kind: CallKind, countsIn: CountsIn = 'both'): number {
    this.writes++;
    const r = stmt(this.db, 'INSERT INTO calls (at_ms, owner, endpoint, counts_in) VALUES (?, ?, ?, ?)').run(atMs, owner, kind, countsIn);
    return Number(r.lastInsertRowid);
  }

  /** The request left later than it was reserved: it counts from then. */
  retimeCall(id: number, atMs: number): void {
    this.writes++;
    stmt(this.db, 'UPDATE calls SET at_ms = ? WHERE id = ?').run(atMs, id);
  }

  completeCall(id: number, a: CallAnswer): void {
    this.writes++;
    stmt(this.db, 'UPDATE calls SET sent_request_id = ?, answered_ms = ?, http_status = ?, code = ? WHERE id = ?').run(
      a.sentRequestId,
      a.answeredMs,
      a.httpStatus,
      a.code,
      id,
    );
  }

  /** A reservation whose call was never sent (the stage found nothing to send). */
  deleteCall(id: number): void {
    this.writes++;
    stmt(this.db, 'DELETE FROM calls WHERE id = ?').run(id);
  }

  /**
   * A call a ledger recorded that this store does not hold (the store is new, or was
   * removed): added, so the windows count it. Known by its X-Request-Id.
   */
  importCall(owner: string, atMs: number, kind: CallKind, a: CallAnswer): boolean {
    if (stmt(this.db, 'SELECT 1 FROM calls WHERE sent_request_id = ?').get(a.sentRequestId) !== undefined) return false;
    this.writes++;
    stmt(
      this.db,
      'INSERT INTO calls (at_ms, owner, endpoint, sent_request_id, answered_ms, http_status, code) VALUES (?, ?, ?, ?, ?, ?, ?)',
    ).run(atMs, owner, kind, a.sentRequestId, a.answeredMs, a.httpStatus, a.code);
    return true;
  }

  pausedUntil(): number {
    return stmt<[], { until_ms: number }>(this.db, 'SELECT until_ms FROM pause WHERE id = 1').get()?.until_ms ?? 0;
  }

  /** No call before `untilMs`, for every process (the later pause wins). */
  pause(untilMs: number, atMs: number): void {
    this.writes++;
    stmt(
      this.db,
      `INSERT INTO pause (id, until_ms, at_ms) VALUES (1, ?, ?)
       ON CONFLICT (id) DO UPDATE SET until_ms = MAX(until_ms, excluded.until_ms), at_ms = excluded.at_ms`,
    ).run(untilMs, atMs);
  }

  getMeta(key: string): string | undefined {
    return stmt<[string], { value: string }>(this.db, 'SELECT value FROM meta WHERE key = ?').get(key)?.value;
  }

  setMeta(key: string, value: string): void {
    this.writes++;
    stmt(this.db, 'INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(key, value);
  }

  // ---- slots -------------------------------------------------------------------------

  slots(): SlotRow[] {
    return stmt<[], SlotRow>(this.db, SELECT_SLOTS).all();
  }

  insertSlot(owner: string, s: NewSlot): number {
    this.writes++;
    const r = stmt(this.db, 'INSERT INTO slots (owner, item_id, ref, kind, since_ms, expires_ms) VALUES (?, ?, ?, ?, ?, ?)').run(
      owner,
      s.itemId,
      s.ref,
      s.kind,
      s.sinceMs,
      s.expiresMs,
    );
    return Number(r.lastInsertRowid);
  }

  setSlot(id: number, kind: SlotKind, ref: string | null, sinceMs: number, expiresMs: number): void {
    this.writes++;
    stmt(this.db, 'UPDATE slots SET kind = ?, ref = ?, since_ms = ?, expires_ms = ? WHERE id = ?').run(kind, ref, sinceMs, expiresMs, id);
  }

  /** The owner's idea of how long a task may run changed: its counted rows expire `boundMs` after their start. */
  reboundOwner(owner: string, boundMs: number): void {
    this.writes++;
    stmt(this.db, "UPDATE slots SET expires_ms = since_ms + ? WHERE owner = ? AND kind IN ('create', 'active', 'held')").run(
      boundMs,
      owner,
    );
  }

  deleteSlot(id: number): void {
    this.writes++;
    stmt(this.db, 'DELETE FROM slots WHERE id = ?').run(id);
  }

  /** An owner's task ended: its slot is free. */
  deleteTaskSlot(owner: string, taskId: string): number {
    this.writes++;
    return stmt(this.db, "DELETE FROM slots WHERE owner = ? AND ref = ? AND kind = 'active'").run(owner, taskId).changes;
  }

  /**
   * Rows shown not to be running (held ones, or a gone run's, when the service accepted a
   * create beyond them): kept, no longer counted.
   */
  release(ids: readonly number[]): void {
    this.writes++;
    for (const id of ids) stmt(this.db, "UPDATE slots SET kind = 'released' WHERE id = ? AND kind <> 'released'").run(id);
  }

  /** `darkroom retry --held`: the held rows of these creates (by X-Request-Id) are freed. */
  releaseHeldRefs(owner: string, refs: readonly string[]): number {
    this.writes++;
    let n = 0;
    for (const ref of refs) {
      n += stmt(this.db, "UPDATE slots SET kind = 'released' WHERE owner = ? AND ref = ? AND kind = 'held'").run(owner, ref).changes;
    }
    return n;
  }

  /**
   * `darkroom retry --held`: these creates' rows are freed, held ones by X-Request-Id, and
   * those a stopped run left as creates in flight by photo (given the X-Request-Id they
   * were sent with, so its restart does not count them again: replaceOwnerSlots).
   */
  releaseHeldCreates(owner: string, creates: readonly { itemId: number; ref: string }[]): number {
    return this.immediate(() => {
      let n = this.releaseHeldRefs(
        owner,
        creates.map((c) => c.ref),
      );
      for (const c of creates) {
        n += stmt(this.db, "UPDATE slots SET kind = 'released', ref = ? WHERE owner = ? AND item_id = ? AND kind = 'create'").run(
          c.ref,
          owner,
          c.itemId,
        ).changes;
      }
      return n;
    });
  }

  /**
   * A run's reconciliation of its own rows with its ledger: everything it held is replaced
   * by `rows`, except rows already released, which stay released (a released held create
   * is not counted again by a restart).
   */
  replaceOwnerSlots(owner: string, rows: readonly NewSlot[]): void {
    this.writes++;
    const released = new Set(
      stmt<[string], { ref: string | null }>(this.db, "SELECT ref FROM slots WHERE owner = ? AND kind = 'released'")
        .all(owner)
        .map((r) => r.ref),
    );
    stmt(this.db, "DELETE FROM slots WHERE owner = ? AND kind <> 'released'").run(owner);
    for (const r of rows) {
      if (r.kind === 'held' && released.has(r.ref)) continue;
      this.insertSlot(owner, r);
    }
  }

  registerOwner(owner: string, pid: number, host: string, startedMs: number): void {
    this.writes++;
    stmt(
      this.db,
      `INSERT INTO owners (owner, pid, host, started_ms) VALUES (?, ?, ?, ?)
       ON CONFLICT (owner) DO UPDATE SET pid = excluded.pid, host = excluded.host, started_ms = excluded.started_ms`,
    ).run(owner, pid, host, startedMs);
  }

  /**
   * Forget what no longer counts: calls older than `callsBeforeMs`, held and released rows
   * past their time, and rows and registrations of owners that are gone, once expired.
   */
  prune(now: number, callsBeforeMs: number, deadOwners: readonly string[]): void {
    this.writes++;
    stmt(this.db, 'DELETE FROM calls WHERE at_ms < ?').run(callsBeforeMs);
    stmt(this.db, "DELETE FROM slots WHERE kind IN ('held', 'released') AND expires_ms <= ?").run(now);
    for (const owner of deadOwners) {
      stmt(this.db, 'DELETE FROM slots WHERE owner = ? AND expires_ms <= ?').run(owner, now);
      stmt(this.db, 'DELETE FROM owners WHERE owner = ? AND NOT EXISTS (SELECT 1 FROM slots WHERE slots.owner = owners.owner)').run(owner);
    }
  }
}
