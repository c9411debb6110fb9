import type Database from 'better-sqlite3';
import { stmt } from './statements.js';

/** A photo reaching a state that `run --json` reports, as the transitions table recorded it. */
export interface PhotoTransition {
  /** The transition's id: events are read in this order, each once. */
  readonly id: number;
  readonly itemId: number;
  readonly state: 'done' | 'failed' | 'held' | 'skipped';
  readonly atMs: number;
  /** The photo's label: its path under input.dir (or a URL input's name). */
  readonly path: string;
  readonly stepIndex: number;
  /** Why it failed, was held or skipped (items.reason, else the transition's note). */
  readonly reason: string | null;
  readonly requestId: string | null;
  readonly taskId: string | null;
}

/**
 * The run's photo events come from the ledger's transitions, not from the stages: every
 * state change of a photo is one row there, written in the same transaction as the change,
 * so a reader that follows the rows by id sees each outcome exactly once and never one that
 * did not happen.
 */
export class PhotoEvents {
  constructor(private readonly db: Database.Database) {}

  /** The newest transition's id (0 when none): a run reports what comes after it. */
  lastId(): number {
    return stmt<[], { id: number | null }>(this.db, 'SELECT MAX(id) AS id FROM transitions').get()?.id ?? 0;
  }

  /** Photos that reached done, failed, held or skipped after transition `afterId`, oldest first. */
  since(afterId: number, limit = 1000): PhotoTransition[] {
    return stmt<[number, number], PhotoTransition>(
      this.db,
      `SELECT t.id AS id, t.item_id AS itemId, t.to_state AS state, t.at_ms AS atMs, i.rel_path AS path,
              i.step_index AS stepIndex, COALESCE(i.reason, t.note) AS reason, i.request_id AS requestId, i.task_id AS taskId
       FROM transitions t JOIN items i ON i.id = t.item_id
       WHERE t.id > ? AND t.to_state IN ('done', 'failed', 'held', 'skipped')
       ORDER BY t.id LIMIT ?`,
    ).all(afterId, limit);
  }
}
