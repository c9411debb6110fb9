import type Database from 'better-sqlite3';
import { clock } from '../clock.js';
import type { Items } from './items.js';
import type { ItemRow } from './rows.js';
import { stmt } from './statements.js';

export type HoldKind = 'ambiguous' | 'timeout';

export interface HeldItem {
  readonly id: number;
  readonly path: string;
  readonly step: number;
  readonly kind: HoldKind;
  readonly reason: string | null;
  /** The X-Request-Id darkroom sent with the item's latest create. */
  readonly sentRequestId: string | null;
  /** The service's requestId, when an answer (or part of one) came back. */
  readonly requestId: string | null;
  readonly taskId: string | null;
}

export interface Requeued {
  /** Ambiguous creates sent to be created again: each may be a second charge. */
  readonly recreated: number;
  /** Timed-out tasks sent to be polled again (no new create unless the task is gone or fails). */
  readonly repolled: number;
}

/**
 * The operator's side of L2: what is held, and putting it back to work. Nothing here runs
 * on its own; `darkroom retry --held` (after asking) or `onAmbiguous: resubmit` calls it.
 */
export class Held {
  constructor(
    private readonly db: Database.Database,
    private readonly items: Items,
  ) {}

  list(kinds: readonly HoldKind[] = ['ambiguous', 'timeout']): HeldItem[] {
    const marks = kinds.map(() => '?').join(',');
    return stmt<HoldKind[], HeldItem>(
      this.db,
      `SELECT i.id, i.rel_path AS path, i.step_index AS step, COALESCE(i.hold_kind, 'ambiguous') AS kind, i.reason,
              i.request_id AS requestId, i.task_id AS taskId,
              (SELECT s.request_id FROM submissions s WHERE s.item_id = i.id ORDER BY s.id DESC LIMIT 1) AS sentRequestId
       FROM items i WHERE i.state = 'held' AND COALESCE(i.hold_kind, 'ambiguous') IN (${marks}) ORDER BY i.id`,
    ).all(...kinds);
  }

  /**
   * Creates a run left in flight when it stopped (killed, a power cut): still `sending`,
   * the next writer's recovery holds them (ledger.ts, recoverStale). Listed as held already, for `darkroom
   * retry --held` (which recovers first) — only when no run holds the ledger: the caller checks.
   */
  inFlightOfStoppedRun(): HeldItem[] {
    return stmt<[], HeldItem>(
      this.db,
      `SELECT i.id, i.rel_path AS path, i.step_index AS step, 'ambiguous' AS kind,
              'create outcome unknown: a run stopped while it was in flight' AS reason,
              NULL AS requestId, NULL AS taskId, s.request_id AS sentRequestId
       FROM items i JOIN submissions s ON s.item_id = i.id AND s.state = 'sending'
       WHERE i.state = 'submitting' ORDER BY i.id`,
    ).all();
  }

  /**
   * Held ambiguous items that `onAmbiguous: resubmit` may send again: fewer than
   * `maxPerStep` creates of their current step have had an unknown outcome.
   */
  resubmittable(maxPerStep: number): number[] {
    return stmt<[number], { id: number }>(
      this.db,
      `SELECT i.id FROM items i WHERE i.state = 'held' AND COALESCE(i.hold_kind, 'ambiguous') = 'ambiguous'
         AND (SELECT COUNT(*) FROM submissions s WHERE s.item_id = i.id AND s.step_index = i.step_index AND s.state = 'ambiguous') < ?
       ORDER BY i.id`,
    )
      .all(maxPerStep)
      .map((r) => r.id);
  }

  /**
   * Put held items back to work, in one transaction. An ambiguous create goes back to
   * `uploaded` to be created again with its recorded input URL (the operator accepted that
   * a second charge is possible). A timed-out task goes back to `active` with a fresh
   * polling cap: polling costs no credit, and if it finishes no second task is made.
   */
  requeue(kinds: readonly HoldKind[], note: string, onlyIds?: readonly number[]): Requeued {
    const only = onlyIds ? new Set(onlyIds) : undefined;
    return this.db
      .transaction(() => {
        let recreated = 0;
        let repolled = 0;
        const now = clock.now();
        for (const h of this.list(kinds)) {
          if (only && !only.has(h.id)) continue;
          const item = this.items.get(h.id) as ItemRow;
          if (h.kind === 'timeout' && item.task_id !== null && item.business_type !== null) {
            this.items.move(item.id, 'held', 'active', { task_started_ms: now, due_ms: now, reason: null, retries: 0 }, note);
            repolled++;
          } else {
            this.items.move(
              item.id,
              'held',
              'uploaded',
              { task_id: null, business_type: null, task_started_ms: null, due_ms: now, reason: null, retries: 0 },
              note,
            );
            recreated++;
          }
        }
        return { recreated, repolled };
      })
      .immediate();
  }
}
