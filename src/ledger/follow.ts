import type Database from 'better-sqlite3';
import { clock } from '../clock.js';
import { hasTable, stmt } from './statements.js';

/** What `status` and the live display show of a run that follows its input folder (migrations/014_follow.sql). */
export interface FollowState {
  readonly pid: number;
  readonly how: 'events' | 'poll';
  readonly pollMs: number;
  readonly sinceMs: number;
  /** The latest photo recorded while following; null before any. */
  readonly lastNewMs: number | null;
  /** Files seen and not yet taken (still changing, or not decoding yet). */
  readonly settling: number;
  /** When the run stopped following; null while it follows (or was killed: the lock says which). */
  readonly endedMs: number | null;
}

interface Row {
  pid: number;
  how: 'events' | 'poll';
  poll_ms: number;
  since_ms: number;
  last_new_ms: number | null;
  settling: number;
  ended_ms: number | null;
}

/** The follow row, written by the run that follows (each a one-statement write: no state of a photo moves). */
export class Following {
  constructor(private readonly db: Database.Database) {}

  begin(pid: number, how: FollowState['how'], pollMs: number): void {
    stmt(
      this.db,
      `INSERT INTO follow_state (id, pid, how, poll_ms, since_ms, last_new_ms, settling, ended_ms) VALUES (1, ?, ?, ?, ?, NULL, 0, NULL)
       ON CONFLICT (id) DO UPDATE SET pid = excluded.pid, how = excluded.how, poll_ms = excluded.poll_ms,
         since_ms = excluded.since_ms, last_new_ms = NULL, settling = 0, ended_ms = NULL`,
    ).run(pid, how, pollMs, clock.now());
  }

  /** New photos were recorded now. */
  found(): void {
    stmt(this.db, 'UPDATE follow_state SET last_new_ms = ? WHERE id = 1').run(clock.now());
  }

  settling(n: number): void {
    stmt(this.db, 'UPDATE follow_state SET settling = ? WHERE id = 1 AND settling <> ?').run(n, n);
  }

  end(): void {
    stmt(this.db, 'UPDATE follow_state SET ended_ms = ?, settling = 0 WHERE id = 1 AND ended_ms IS NULL').run(clock.now());
  }

  read(): FollowState | undefined {
    return readFollow(this.db);
  }
}

/** The follow row, or undefined on a ledger no run has followed (or older than the table). */
export function readFollow(db: Database.Database): FollowState | undefined {
  if (!hasTable(db, 'follow_state')) return undefined;
  const r = stmt<[], Row>(db, 'SELECT * FROM follow_state WHERE id = 1').get();
  if (!r) return undefined;
  return {
    pid: r.pid,
    how: r.how,
    pollMs: r.poll_ms,
    sinceMs: r.since_ms,
    lastNewMs: r.last_new_ms,
    settling: r.settling,
    endedMs: r.ended_ms,
  };
}
