import type Database from 'better-sqlite3';
import type { CallRow } from './rows.js';
import { stmt } from './statements.js';
import { randomUUID } from 'node:crypto';

/** The fields of the API client's CallRecord the log keeps. */
export interface CallReport {
  readonly atMs: number;
  readonly method: string;
  readonly endpoint: string;
  readonly httpStatus: number | null;
  readonly businessCode: number | null;
  readonly requestId: string | null;
  readonly sentRequestId: string;
  readonly durationMs: number;
  readonly errorCode: string | null;
}

/** L3: the log of every authenticated call; the call budget is rebuilt from it. */
export class Calls {
  constructor(private readonly db: Database.Database) {}

  log(c: CallRow): void {
    // Positional: binding ten named parameters from an object cost more than the insert.
    stmt(
      this.db,
      `INSERT INTO calls (at_ms, key_fp, method, endpoint, http_status, code, request_id, sent_request_id, duration_ms, error)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(c.at_ms, c.key_fp, c.method, c.endpoint, c.http_status, c.code, c.request_id, c.sent_request_id, c.duration_ms, c.error);
  }

  /** Log one call as the API client reports it (its CallRecord), under the key's fingerprint. */
  record(keyFp: string, rec: CallReport): void {
    this.log({
      at_ms: rec.atMs,
      key_fp: keyFp,
      method: rec.method,
      endpoint: rec.endpoint,
      http_status: rec.httpStatus,
      code: rec.businessCode,
      request_id: rec.requestId,
      sent_request_id: rec.sentRequestId,
      duration_ms: rec.durationMs,
      error: rec.errorCode,
    });
  }

  /** Times of a key's calls since `sinceMs`, oldest first. */
  timesSince(keyFp: string, sinceMs: number): number[] {
    return stmt<[string, number], { at_ms: number }>(this.db, 'SELECT at_ms FROM calls WHERE key_fp = ? AND at_ms > ? ORDER BY at_ms')
      .all(keyFp, sinceMs)
      .map((r) => r.at_ms);
  }

  /** A pause the service asked for on this key: no call before `untilMs` (the later pause wins). */
  pause(keyFp: string, untilMs: number, atMs: number): void {
    stmt(
      this.db,
      `INSERT INTO key_pauses (key_fp, until_ms, at_ms) VALUES (?, ?, ?)
       ON CONFLICT (key_fp) DO UPDATE SET until_ms = MAX(until_ms, excluded.until_ms), at_ms = excluded.at_ms`,
    ).run(keyFp, untilMs, atMs);
  }

  /** The end of the key's last pause (0 if none): a restart inherits it with the windows. */
  pausedUntil(keyFp: string): number {
    const r = stmt<[string], { until_ms: number }>(this.db, 'SELECT until_ms FROM key_pauses WHERE key_fp = ?').get(keyFp);
    return r?.until_ms ?? 0;
  }

  countSince(sinceMs: number): { key_fp: string; n: number }[] {
    return stmt<[number], { key_fp: string; n: number }>(
      this.db,
      'SELECT key_fp, COUNT(*) AS n FROM calls WHERE at_ms > ? GROUP BY key_fp ORDER BY key_fp',
    ).all(sinceMs);
  }

  total(): number {
    return (stmt(this.db, 'SELECT COUNT(*) AS n FROM calls').get() as { n: number }).n;
  }
}

/** A call of the ledger's log (L3), in the key store's terms. */
export interface LoggedCall {
  readonly atMs: number;
  readonly kind: CallKind;
  readonly sentRequestId: string;
  readonly answeredMs: number;
  readonly httpStatus: number | null;
  readonly code: number | null;
}

const UPLOAD = '/api/v1/image/upload';
const POLL = '/api/v1/tasks/{businessType}/{taskId}';
const ACCOUNT = new Set(['/api/v1/credits', '/api/v1/usage']);

/* The rows a key's store (src/keystore/store.ts) keeps, as the ledger hands them over. */

/** Which rolling windows a call counts in (see migrations/keystore/001_initial.sql). */
export type CountsIn = 'both' | 'minute' | 'hour';
export type CallKind = 'upload' | 'create' | 'poll' | 'account' | 'foreign';
export type SlotKind = 'create' | 'active' | 'held' | 'released';

export interface NewSlot {
  readonly itemId: number | null;
  readonly ref: string | null;
  readonly kind: SlotKind;
  readonly sinceMs: number;
  readonly expiresMs: number;
}

/**
 * What a ledger tells its keys' machine-wide stores (src/keystore/store.ts): which task
 * slots its photos hold, which calls it made lately, how long its tasks took, and the
 * ledger's own id, under which its rows are kept there.
 */
export class KeyFacts {
  constructor(private readonly db: Database.Database) {}

  /** The ledger's id in the key stores (meta 'owner_id'): made once, kept with the ledger. */
  ownerId(): string {
    const row = stmt<[], { value: string }>(this.db, "SELECT value FROM meta WHERE key = 'owner_id'").get();
    if (row) return row.value;
    const id = `l_${randomUUID()}`;
    stmt(this.db, "INSERT INTO meta (key, value) VALUES ('owner_id', ?) ON CONFLICT (key) DO NOTHING").run(id);
    return stmt<[], { value: string }>(this.db, "SELECT value FROM meta WHERE key = 'owner_id'").get()!.value;
  }

  /**
   * The longest task latency among the last `n` tasks that ended on their own (start to
   * the poll that saw the end), or null before any did.
   */
  longestRecentLatencyMs(n = 200): number | null {
    const r = stmt<[number], { m: number | null }>(
      this.db,
      `SELECT MAX(ended_ms - started_ms) AS m FROM (
         SELECT ended_ms, started_ms FROM attempts
         WHERE ended_ms IS NOT NULL AND status IN ('SUCCESS', 'FAIL', 'ERROR', 'OTHER')
         ORDER BY id DESC LIMIT ?)`,
    ).get(n);
    return r?.m ?? null;
  }

  /**
   * The median task latency among the last `n` tasks that ended on their own, or null
   * before any did: what a slot's wait after a 429 on api_key_active_tasks starts from.
   */
  typicalRecentLatencyMs(n = 50): number | null {
    const ms = stmt<[number], { ms: number }>(
      this.db,
      `SELECT ended_ms - started_ms AS ms FROM attempts
       WHERE ended_ms IS NOT NULL AND status IN ('SUCCESS', 'FAIL', 'ERROR', 'OTHER')
       ORDER BY id DESC LIMIT ?`,
    )
      .all(n)
      .map((r) => r.ms)
      .sort((a, b) => a - b);
    return ms.length === 0 ? null : ms[Math.floor((ms.length - 1) / 2)]!;
  }

  /**
   * The task slots this ledger's photos may hold on a key at `now`, for its key store,
   * each from the latest moment its task could have started, for `boundMs`:
   * - tasks running (an active item's current task, not yet seen ended), from their acceptance;
   * - creates whose outcome is unknown (ambiguous), from when the client gave up on them
   *   (at most their send plus `timeoutMs`, the call timeout): held;
   * - orphan tasks (an attempt never seen ended that is not its item's current task, e.g.
   *   abandoned when the job's steps changed), from their acceptance: held.
   * Held ones whose time is over are left out.
   */
  slotsOf(keyFp: string, now: number, boundMs: number, timeoutMs: number): NewSlot[] {
    const edge = now - boundMs;
    const slots: NewSlot[] = [];
    for (const r of stmt<[string], { item_id: number; task_id: string; started_ms: number }>(
      this.db,
      `SELECT i.id AS item_id, a.task_id, MAX(a.started_ms) AS started_ms FROM items i
       JOIN attempts a ON a.item_id = i.id AND a.task_id = i.task_id
       WHERE i.state = 'active' AND i.key_fp = ? AND a.ended_ms IS NULL
       GROUP BY i.id, a.task_id`,
    ).all(keyFp)) {
      slots.push({ itemId: r.item_id, ref: r.task_id, kind: 'active', sinceMs: r.started_ms, expiresMs: r.started_ms + boundMs });
    }
    for (const r of stmt<[number, number, string, number], { item_id: number; request_id: string; since_ms: number }>(
      this.db,
      `SELECT item_id, request_id, MIN(COALESCE(resolved_ms, sent_ms + ?), sent_ms + ?) AS since_ms FROM submissions
       WHERE key_fp = ? AND state = 'ambiguous' AND sent_ms > ? ORDER BY id`,
    ).all(timeoutMs, timeoutMs, keyFp, edge - timeoutMs)) {
      if (r.since_ms > edge)
        slots.push({ itemId: r.item_id, ref: r.request_id, kind: 'held', sinceMs: r.since_ms, expiresMs: r.since_ms + boundMs });
    }
    for (const r of stmt<[string, number], { item_id: number; task_id: string; started_ms: number }>(
      this.db,
      `SELECT a.item_id, a.task_id, a.started_ms FROM attempts a
       JOIN submissions s ON s.id = a.submission_id
       JOIN items i ON i.id = a.item_id
       WHERE s.key_fp = ? AND a.ended_ms IS NULL AND a.started_ms > ?
         AND NOT (i.state = 'active' AND i.task_id = a.task_id)
       ORDER BY a.id`,
    ).all(keyFp, edge)) {
      slots.push({ itemId: r.item_id, ref: r.task_id, kind: 'held', sinceMs: r.started_ms, expiresMs: r.started_ms + boundMs });
    }
    return slots;
  }

  /** The key's calls the ledger logged since `sinceMs` (a store that lacks them must count them). */
  callsSince(keyFp: string, sinceMs: number): LoggedCall[] {
    return stmt<
      [string, number],
      { at_ms: number; endpoint: string; sent_request_id: string; duration_ms: number; http_status: number | null; code: number | null }
    >(
      this.db,
      'SELECT at_ms, endpoint, sent_request_id, duration_ms, http_status, code FROM calls WHERE key_fp = ? AND at_ms > ? ORDER BY at_ms',
    )
      .all(keyFp, sinceMs)
      .map((c) => ({
        atMs: c.at_ms,
        kind: c.endpoint === UPLOAD ? 'upload' : c.endpoint === POLL ? 'poll' : ACCOUNT.has(c.endpoint) ? 'account' : 'create',
        sentRequestId: c.sent_request_id,
        answeredMs: c.at_ms + c.duration_ms,
        httpStatus: c.http_status,
        code: c.code,
      }));
  }

  /** Whether a lane of this key has work that needs calls: photos to upload, to create or to poll. */
  needsCalls(keyFp: string): boolean {
    return (
      stmt(
        this.db,
        `SELECT 1 FROM items WHERE (state IN ('uploaded', 'active', 'uploading', 'submitting') AND key_fp = ?)
           OR (state = 'queued' AND (key_fp = ? OR key_fp IS NULL)) LIMIT 1`,
      ).get(keyFp, keyFp) !== undefined
    );
  }
}
