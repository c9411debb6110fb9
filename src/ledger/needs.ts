import type Database from 'better-sqlite3';
import { stmt } from './statements.js';

/**
 * Creates still to be made for every photo that is not finished: one per remaining step,
 * the current one included unless its task already exists (active) or is done with
 * (succeeded, downloading). Held, failed and skipped photos need none until an operator acts.
 */
export function createsNeeded(db: Database.Database, stepCount: number): number {
  const r = stmt<[{ steps: number }], { n: number | null }>(
    db,
    `SELECT SUM(CASE
               WHEN state IN ('queued', 'uploading', 'uploaded', 'submitting') THEN @steps - step_index
               WHEN state = 'active' THEN @steps - step_index - 1
               ELSE 0 END) AS n
     FROM items WHERE state NOT IN ('done', 'held', 'failed', 'skipped', 'gone')`,
  ).get({ steps: stepCount });
  return Math.max(0, r?.n ?? 0);
}
