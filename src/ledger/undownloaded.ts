import type Database from 'better-sqlite3';
import { stmt } from './statements.js';

/**
 * Photos paid for whose result is not on disk yet: the last task succeeded (the service
 * charged for it and holds the result), the output is not written. They are pending, not
 * failed: every `darkroom run` downloads them first. One the run could not write stays
 * `succeeded` with a reason (its due time PARKED_MS until the next run starts).
 *
 * Also counted: an item polled again for a fresh result URL (its last URL expired), back in
 * `active` with its task's attempt still SUCCESS.
 */
export interface NotDownloaded {
  readonly id: number;
  readonly path: string;
  /** Why the last try failed (what to do, for a parked one), or null before any try. */
  readonly reason: string | null;
}

/** due_ms of a photo parked until the next run (the largest time a JS Date holds): no retry in this run. */
export const PARKED_MS = 8_640_000_000_000_000;

const WHERE = `(i.state IN ('succeeded', 'downloading')
   OR (i.state = 'active' AND EXISTS (SELECT 1 FROM attempts a WHERE a.item_id = i.id AND a.task_id = i.task_id AND a.status = 'SUCCESS')))`;

export function countNotDownloaded(db: Database.Database): number {
  return stmt<[], { n: number }>(db, `SELECT COUNT(*) AS n FROM items i WHERE ${WHERE}`).get()!.n;
}

/** The first `limit` of them, by id, with their reasons. */
export function listNotDownloaded(db: Database.Database, limit = 200): NotDownloaded[] {
  return stmt<[number], NotDownloaded>(
    db,
    `SELECT i.id, i.rel_path AS path, i.reason FROM items i WHERE ${WHERE} ORDER BY i.id LIMIT ?`,
  ).all(limit);
}
