import type Database from 'better-sqlite3';
import { clock } from '../clock.js';
import type { Items } from './items.js';
import type { ItemPatch, ItemRow, SubmissionRow } from './rows.js';
import { inTransaction, stmt } from './statements.js';
import { assertSubmissionTransition, type SubmissionState } from './transitions.js';

export interface SubmissionOutcome {
  readonly httpStatus: number | null;
  readonly code: number | null;
  readonly responseRequestId: string | null;
  readonly error: string | null;
}

export interface Accepted {
  readonly taskId: string;
  readonly businessType: string;
  readonly responseRequestId: string | null;
  readonly waitHintMs: number | null;
  /** When the first poll is due. */
  readonly pollAtMs: number;
}

/**
 * The create protocol's writes (L1, L2). Each is one transaction that changes the
 * submission and its item together, so a crash can never leave one without the other.
 */
export class Submissions {
  constructor(
    private readonly db: Database.Database,
    private readonly items: Items,
  ) {}

  /** L1: committed before the request leaves the process. */
  begin(item: ItemRow, capability: string, keyFp: string, requestId: string): number {
    return inTransaction(this.db, () => {
      this.items.move(item.id, 'uploaded', 'submitting', { key_fp: keyFp, request_id: requestId });
      assertSubmissionTransition(null, 'sending');
      const r = stmt(
        this.db,
        `INSERT INTO submissions (item_id, step_index, capability, key_fp, request_id, state, sent_ms)
         VALUES (?, ?, ?, ?, ?, 'sending', ?)`,
      ).run(item.id, item.step_index, capability, keyFp, requestId, clock.now());
      return Number(r.lastInsertRowid);
    });
  }

  accept(submissionId: number, item: ItemRow, a: Accepted): ItemRow {
    return inTransaction(this.db, () => {
      const now = clock.now();
      this.resolve(
        submissionId,
        'accepted',
        {
          httpStatus: 200,
          code: 0,
          responseRequestId: a.responseRequestId,
          error: null,
        },
        a.taskId,
        a.businessType,
      );
      const sub = this.get(submissionId)!;
      const attempt = item.attempt + 1;
      stmt(
        this.db,
        `INSERT INTO attempts (item_id, submission_id, step_index, capability, attempt, task_id, business_type, status, wait_hint_ms, started_ms, steps_sig)
         VALUES (?, ?, ?, ?, ?, ?, ?, 'PENDING', ?, ?, (SELECT steps_sig FROM items WHERE id = ?))`,
      ).run(item.id, submissionId, item.step_index, sub.capability, attempt, a.taskId, a.businessType, a.waitHintMs, now, item.id);
      return this.items.move(item.id, 'submitting', 'active', {
        task_id: a.taskId,
        business_type: a.businessType,
        task_started_ms: now,
        attempt,
        due_ms: a.pollAtMs,
        reason: null,
        request_id: a.responseRequestId,
        retries: 0,
      });
    });
  }

  /**
   * Definitely not created (never sent, 429, 503, a 4xx): the item goes back to wait for
   * another create (`uploaded`) or, when the request itself is wrong, to `failed`.
   */
  reject(
    submissionId: number,
    item: ItemRow,
    o: SubmissionOutcome,
    to: 'uploaded' | 'failed' | 'queued',
    dueMs: number,
    reason: string,
    extra: ItemPatch = {},
  ): ItemRow {
    return inTransaction(this.db, () => {
      this.resolve(submissionId, 'rejected', o, null, null);
      return this.items.move(
        item.id,
        'submitting',
        to,
        {
          due_ms: dueMs,
          reason: to === 'failed' ? reason : null,
          request_id: o.responseRequestId,
          retries: item.retries + 1,
          ...extra,
        },
        reason,
      );
    });
  }

  /**
   * The newest create of this item's step before `beforeId` that settled something about
   * its input: accepted (the service knew the image), or refused with -2 (it did not). Null
   * when none did. Tells a forgotten upload (-2 after the image worked or was never tried)
   * from an image the service refuses whatever is uploaded (-2 right after a fresh upload).
   */
  lastInputVerdict(itemId: number, stepIndex: number, beforeId: number): 'accepted' | 'refused' | null {
    const r = stmt<[number, number, number], { state: string }>(
      this.db,
      `SELECT state FROM submissions WHERE item_id = ? AND step_index = ? AND id < ?
         AND (state = 'accepted' OR (state = 'rejected' AND code = -2)) ORDER BY id DESC LIMIT 1`,
    ).get(itemId, stepIndex, beforeId);
    return r === undefined ? null : r.state === 'accepted' ? 'accepted' : 'refused';
  }

  /** L2: the outcome is unknown; the item is held until an operator decides. */
  ambiguous(submissionId: number, item: ItemRow, o: SubmissionOutcome, reason: string): ItemRow {
    return inTransaction(this.db, () => {
      this.resolve(submissionId, 'ambiguous', o, null, null);
      return this.items.move(item.id, 'submitting', 'held', { reason, request_id: o.responseRequestId, hold_kind: 'ambiguous' }, reason);
    });
  }

  /** Creates of this item's step whose outcome stayed unknown (bounds `onAmbiguous: resubmit`). */
  ambiguousCount(itemId: number, stepIndex: number): number {
    return (
      stmt<[number, number], { n: number }>(
        this.db,
        "SELECT COUNT(*) AS n FROM submissions WHERE item_id = ? AND step_index = ? AND state = 'ambiguous'",
      ).get(itemId, stepIndex)?.n ?? 0
    );
  }

  get(id: number): SubmissionRow | undefined {
    return stmt<[number], SubmissionRow>(this.db, 'SELECT * FROM submissions WHERE id = ?').get(id);
  }

  forItem(itemId: number): SubmissionRow[] {
    return stmt<[number], SubmissionRow>(this.db, 'SELECT * FROM submissions WHERE item_id = ? ORDER BY id').all(itemId);
  }

  /** The newest submission of an item, for status lines and support requests. */
  latestForItem(itemId: number): SubmissionRow | undefined {
    return stmt<[number], SubmissionRow>(this.db, 'SELECT * FROM submissions WHERE item_id = ? ORDER BY id DESC LIMIT 1').get(itemId);
  }

  private resolve(id: number, state: SubmissionState, o: SubmissionOutcome, taskId: string | null, businessType: string | null): void {
    assertSubmissionTransition('sending', state);
    const r = stmt(
      this.db,
      `UPDATE submissions SET state = ?, task_id = ?, business_type = ?, response_request_id = ?, http_status = ?, code = ?,
         error = ?, resolved_ms = ? WHERE id = ? AND state = 'sending'`,
    ).run(state, taskId, businessType, o.responseRequestId, o.httpStatus, o.code, o.error, clock.now(), id);
    if (r.changes !== 1) throw new Error(`submission ${id} is no longer 'sending'`);
  }
}

/**
 * What this run's creates may have cost, for the credits guard (`--max-credits`): creates
 * after a submission id (the last one before the run began), by capability, that the
 * service may have charged — accepted, still sending, or ambiguous (it may have made the
 * task) — less those whose task ended FAIL or ERROR (the spec refunds them). A refused
 * create (429, 20601, a bad request) costs nothing.
 */
export class Spend {
  constructor(private readonly db: Database.Database) {}

  /** The newest submission's id, 0 when there is none: the mark a run counts its creates from. */
  lastSubmissionId(): number {
    return stmt<[], { id: number | null }>(this.db, 'SELECT MAX(id) AS id FROM submissions').get()?.id ?? 0;
  }

  /** Chargeable creates after submission `afterId`, per capability. */
  createsSince(afterId: number): Map<string, number> {
    const rows = stmt<[number], { capability: string; n: number }>(
      this.db,
      `SELECT s.capability AS capability, COUNT(*) AS n FROM submissions s
       WHERE s.id > ? AND s.state IN ('sending', 'accepted', 'ambiguous')
         AND NOT EXISTS (SELECT 1 FROM attempts a WHERE a.item_id = s.item_id AND a.submission_id = s.id AND a.status IN ('FAIL', 'ERROR'))
       GROUP BY s.capability`,
    ).all(afterId);
    return new Map(rows.map((r) => [r.capability, r.n]));
  }

  /** Whether a photo was ever sent to be created: one that was is not a new start for `--max-photos`. */
  everSubmitted(itemId: number): boolean {
    return stmt<[number], unknown>(this.db, 'SELECT 1 FROM submissions WHERE item_id = ? LIMIT 1').get(itemId) !== undefined;
  }
}
