import type Database from 'better-sqlite3';
import { stmt } from './statements.js';

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
