import type Database from 'better-sqlite3';
import type { CallRow } from './rows.js';
import { stmt } from './statements.js';

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
