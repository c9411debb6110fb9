import type Database from 'better-sqlite3';
import { clock } from '../clock.js';
import type { Items } from './items.js';
import type { ItemRow } from './rows.js';
import { inTransaction, stmt } from './statements.js';

/** What a poll learned about an item's task, written with the attempt it belongs to. */
export class Tasks {
  constructor(
    private readonly db: Database.Database,
    private readonly items: Items,
  ) {}

  /** Still running: count the poll, set when the next one is due. */
  polled(item: ItemRow, status: string, nextDueMs: number): void {
    inTransaction(this.db, () => {
      this.bumpAttempt(item, status, null, null, false);
      this.items.patch(item.id, 'active', { due_ms: nextDueMs });
    });
  }

  /**
   * SUCCESS. The last step goes on to download; an earlier step feeds its result URL to
   * the next step, with no download of the intermediate.
   */
  succeeded(item: ItemRow, resultUrl: string, isLastStep: boolean): ItemRow {
    return inTransaction(this.db, () => {
      this.bumpAttempt(item, 'SUCCESS', resultUrl, null, true);
      // retries counts this stage's failures: the download starts with a clean count.
      const row = this.items.move(item.id, 'active', 'succeeded', { result_url: resultUrl, due_ms: 0, reason: null, retries: 0 });
      if (isLastStep) return row;
      return this.items.move(
        row.id,
        'succeeded',
        'uploaded',
        {
          step_index: row.step_index + 1,
          input_url: resultUrl,
          attempt: 0,
          task_id: null,
          business_type: null,
          task_started_ms: null,
          due_ms: 0,
        },
        `step ${row.step_index + 1} done`,
      );
    });
  }

  /** FAIL with attempts left (safe to retry, reusing the input URL), or a task that vanished. */
  recreate(item: ItemRow, status: string, reason: string, dueMs: number): ItemRow {
    return inTransaction(this.db, () => {
      this.bumpAttempt(item, status, null, reason, true);
      return this.items.move(item.id, 'active', 'uploaded', { task_id: null, business_type: null, due_ms: dueMs }, reason);
    });
  }

  failed(item: ItemRow, status: string, reason: string): ItemRow {
    return inTransaction(this.db, () => {
      this.bumpAttempt(item, status, null, reason, true);
      return this.items.move(item.id, 'active', 'failed', { reason }, reason);
    });
  }

  /** The polling cap passed: the task may still finish, so it is held, not failed. */
  timedOut(item: ItemRow, reason: string): ItemRow {
    return inTransaction(this.db, () => {
      this.bumpAttempt(item, 'TIMEOUT', null, reason, true);
      return this.items.move(item.id, 'active', 'held', { reason, hold_kind: 'timeout' }, reason);
    });
  }

  /** When a poll last saw the item's current task still running (its start if none has). */
  lastSeenRunning(item: ItemRow): number | null {
    const r = stmt<[number, string | null], { t: number | null; s: number }>(
      this.db,
      'SELECT last_running_ms AS t, started_ms AS s FROM attempts WHERE item_id = ? AND task_id = ? ORDER BY id DESC LIMIT 1',
    ).get(item.id, item.task_id);
    return r ? (r.t ?? r.s) : null;
  }

  /** The create's waitTime hint for the item's current task, if the service gave one. */
  waitHintOfCurrent(item: ItemRow): number | null {
    const r = stmt<[number, string | null], { h: number | null }>(
      this.db,
      'SELECT wait_hint_ms AS h FROM attempts WHERE item_id = ? AND task_id = ? ORDER BY id DESC LIMIT 1',
    ).get(item.id, item.task_id);
    return r?.h ?? null;
  }

  /** Polls already answered for the item's current task (0 before its first). */
  pollsOfCurrent(item: ItemRow): number {
    const r = stmt<[number, string | null], { polls: number }>(
      this.db,
      'SELECT polls FROM attempts WHERE item_id = ? AND task_id = ? ORDER BY id DESC LIMIT 1',
    ).get(item.id, item.task_id);
    return r?.polls ?? 0;
  }

  /**
   * Whether a task of this item's current step already vanished once (it is created again
   * only once), under its current step list: a photo redone under new steps starts afresh.
   */
  hasExpiredBefore(item: ItemRow): boolean {
    return (
      stmt(
        this.db,
        "SELECT 1 FROM attempts WHERE item_id = ? AND step_index = ? AND status = 'EXPIRED' AND steps_sig IS (SELECT steps_sig FROM items WHERE id = ?) LIMIT 1",
      ).get(item.id, item.step_index, item.id) !== undefined
    );
  }

  /**
   * Whether a poll with this businessType was ever answered with a task status: the path
   * is right, so a 404 means the task itself is gone, not that we asked in the wrong place.
   */
  businessTypeAnswered(businessType: string): boolean {
    return (
      stmt(
        this.db,
        `SELECT 1 FROM attempts WHERE business_type = ?
           AND (last_running_ms IS NOT NULL OR status IN ('SUCCESS', 'FAIL', 'ERROR', 'OTHER')) LIMIT 1`,
      ).get(businessType) !== undefined
    );
  }

  /**
   * Whether some photo had two tasks of one step both answer 404 on their very first poll
   * (never seen running) with this businessType: what a wrong businessType in the poll's
   * path looks like, as a vanished task is created again once and that one stays.
   */
  notFoundTwiceOnFirstPoll(businessType: string): boolean {
    return (
      stmt(
        this.db,
        `SELECT 1 FROM attempts WHERE business_type = ? AND status = 'EXPIRED' AND last_running_ms IS NULL
         GROUP BY item_id, step_index HAVING COUNT(*) >= 2 LIMIT 1`,
      ).get(businessType) !== undefined
    );
  }

  private bumpAttempt(item: ItemRow, status: string, resultUrl: string | null, reason: string | null, ended: boolean): void {
    stmt(
      this.db,
      `UPDATE attempts SET polls = polls + 1, status = ?, result_url = COALESCE(?, result_url), reason = COALESCE(?, reason),
         ended_ms = CASE WHEN ? THEN ? ELSE ended_ms END,
         last_running_ms = CASE WHEN ? THEN last_running_ms ELSE ? END
       WHERE id = (SELECT id FROM attempts WHERE item_id = ? AND task_id = ? ORDER BY id DESC LIMIT 1)`,
    ).run(status, resultUrl, reason, ended ? 1 : 0, clock.now(), ended ? 1 : 0, clock.now(), item.id, item.task_id);
  }
}
