import type Database from 'better-sqlite3';
import { stmt } from './statements.js';
import { createsLeftSql, inPhase, sqlList } from './transitions.js';

/**
 * Creates still to be made for every photo that is not finished (createsLeft in
 * transitions.ts, summed in SQL): one per remaining step, the current one included unless
 * its task exists. Held, failed and skipped photos need none until an operator acts.
 */
export function createsNeeded(db: Database.Database, stepCount: number): number {
  const r = stmt<[{ steps: number }], { n: number | null }>(
    db,
    `SELECT SUM(${createsLeftSql()}) AS n FROM items WHERE state IN ${sqlList(inPhase('upload', 'create', 'running', 'paid'))}`,
  ).get({ steps: stepCount });
  return Math.max(0, r?.n ?? 0);
}
