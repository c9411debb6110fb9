import type Database from 'better-sqlite3';
import type { CallRow } from './rows.js';
import { stmt } from './statements.js';

/** L3: the log of every authenticated call; the call budget is rebuilt from it. */
export class Calls {
  constructor(private readonly db: Database.Database) {}

  log(c: CallRow): void {
    stmt(
      this.db,
      `INSERT INTO calls (at_ms, key_fp, method, endpoint, http_status, code, request_id, sent_request_id, duration_ms, error)
       VALUES (@at_ms, @key_fp, @method, @endpoint, @http_status, @code, @request_id, @sent_request_id, @duration_ms, @error)`,
    ).run(c);
  }

  /** Times of a key's calls since `sinceMs`, oldest first. */
  timesSince(keyFp: string, sinceMs: number): number[] {
    return stmt<[string, number], { at_ms: number }>(this.db, 'SELECT at_ms FROM calls WHERE key_fp = ? AND at_ms > ? ORDER BY at_ms')
      .all(keyFp, sinceMs)
      .map((r) => r.at_ms);
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
