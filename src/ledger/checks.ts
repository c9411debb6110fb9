import type Database from 'better-sqlite3';
import { clock } from '../clock.js';
import type { ItemRow } from './rows.js';
import { inTransaction, stmt } from './statements.js';
import { inPhase, sqlList } from './transitions.js';

/**
 * What the full decode of each input's content found (migrations/006_input_checks.sql):
 * null when the image decoded whole, else why it is refused. Kept by content hash, so an
 * unchanged photo is not decoded again on a rerun, and a damaged one stays refused without
 * being read twice.
 */

/** States in which the service already has an item's bytes: a decode could not save a call any more. */
const PAST_UPLOAD = sqlList(inPhase('create', 'running', 'paid', 'done', 'held'));

/**
 * The verdict for one content: null (whole), the reason it is refused, or undefined when it
 * was never checked. Content an item has already uploaded (a ledger from before these
 * checks) counts as whole: there is nothing left to save by decoding it.
 */
export function readVerdict(db: Database.Database, contentHash: string): string | null | undefined {
  const r = stmt<[string], { reason: string | null }>(db, 'SELECT reason FROM input_checks WHERE content_hash = ?').get(contentHash);
  if (r !== undefined) return r.reason;
  const uploaded = stmt<[string], { n: number }>(
    db,
    `SELECT 1 AS n FROM items WHERE content_hash = ? AND (state IN ${PAST_UPLOAD} OR (state = 'failed' AND image_url IS NOT NULL))`,
  ).get(contentHash);
  return uploaded ? null : undefined;
}

export interface CheckVerdict {
  readonly contentHash: string;
  readonly reason: string | null;
}

export class InputChecks {
  constructor(private readonly db: Database.Database) {}

  verdict(contentHash: string): string | null | undefined {
    return readVerdict(this.db, contentHash);
  }

  /** Record what a discovery's decodes found, in one transaction. */
  record(list: readonly CheckVerdict[]): void {
    if (list.length === 0) return;
    const now = clock.now();
    inTransaction(this.db, () => {
      const put = stmt(
        this.db,
        `INSERT INTO input_checks (content_hash, reason, checked_ms) VALUES (?, ?, ?)
         ON CONFLICT (content_hash) DO UPDATE SET reason = excluded.reason, checked_ms = excluded.checked_ms`,
      );
      for (const v of list) put.run(v.contentHash, v.reason, now);
    });
  }

  /**
   * Photos that have their step-1 input URL (a URL input, or a file uploaded by an earlier
   * run) and never had a create sent: nothing charged yet, so what can be checked still saves money.
   */
  notYetCreated(): ItemRow[] {
    return stmt<[], ItemRow>(
      this.db,
      `SELECT * FROM items i WHERE i.state = 'uploaded' AND i.step_index = 0
         AND NOT EXISTS (SELECT 1 FROM submissions s WHERE s.item_id = i.id) ORDER BY i.id`,
    ).all();
  }
}
