import type Database from 'better-sqlite3';
import { clock } from '../clock.js';
import type { Items } from './items.js';
import { stmt } from './statements.js';

/**
 * A failed photo, as `darkroom retry --failed` sees it.
 * - `download`: its last task succeeded (paid for) and only the download failed — what a
 *   darkroom before 0.1.0's paid-result rule did on a result-host outage or a full disk. It goes back
 *   to `succeeded`, to be downloaded: no create, no credit.
 * - `create`: it really failed (ERROR, OTHER, FAIL on every attempt, a refused upload or
 *   create, a task that vanished twice): it is created again from `fromStep`, the step it
 *   failed at when that step's input (the previous step's result URL) is known, else from
 *   the upload.
 */
export interface FailedItem {
  readonly id: number;
  readonly path: string;
  /** The step it failed at, 0-based. */
  readonly step: number;
  readonly reason: string | null;
  readonly kind: 'download' | 'create';
  /** Where a `create` starts again (0: uploaded anew); the step itself for a `download`. */
  readonly fromStep: number;
}

export interface FailedRequeued {
  /** Back to `succeeded`, to be downloaded (no create, no credit). */
  readonly downloads: number;
  /** Back to be created again (a credit for each task that succeeds). */
  readonly recreated: number;
}

interface FailedRow {
  id: number;
  path: string;
  step: number;
  reason: string | null;
  input_url: string | null;
  from_state: string | null;
  paid_url: string | null;
}

/** The operator's side of failed photos; nothing here runs on its own, only `darkroom retry --failed` after the operator's yes. */
export class Failed {
  constructor(
    private readonly db: Database.Database,
    private readonly items: Items,
  ) {}

  list(): FailedItem[] {
    return this.rows().map((r) => {
      const download = r.from_state === 'downloading' && r.paid_url !== null;
      return {
        id: r.id,
        path: r.path,
        step: r.step,
        reason: r.reason,
        kind: download ? 'download' : 'create',
        fromStep: download ? r.step : r.step > 0 && r.input_url !== null ? r.step : 0,
      };
    });
  }

  /** Bad inputs (skipped), which `retry --failed` leaves alone: the file has to change first. */
  skipped(): number {
    return stmt<[], { n: number }>(this.db, "SELECT COUNT(*) AS n FROM items WHERE state = 'skipped'").get()!.n;
  }

  /** Put the given failed items back to work, in one transaction (see FailedItem for where each goes). */
  requeue(ids: readonly number[], note: string): FailedRequeued {
    const only = new Set(ids);
    const byId = new Map(this.rows().map((r) => [r.id, r]));
    return this.db
      .transaction(() => {
        let downloads = 0;
        let recreated = 0;
        const now = clock.now();
        for (const f of this.list()) {
          if (!only.has(f.id)) continue;
          const row = byId.get(f.id)!;
          const fresh = {
            attempt: 0,
            task_id: null,
            business_type: null,
            task_started_ms: null,
            reason: null,
            retries: 0,
            request_id: null,
          };
          if (f.kind === 'download') {
            this.items.move(
              f.id,
              'failed',
              'succeeded',
              { result_url: row.paid_url, due_ms: 0, reason: null, retries: 0 },
              `${note}: paid, only the download was missing`,
            );
            downloads++;
          } else if (f.fromStep > 0) {
            this.items.move(f.id, 'failed', 'uploaded', { ...fresh, due_ms: now }, `${note}: created again from step ${f.fromStep + 1}`);
            recreated++;
          } else {
            this.items.move(
              f.id,
              'failed',
              'queued',
              { ...fresh, step_index: 0, key_fp: null, image_url: null, input_url: null, result_url: null, due_ms: 0 },
              `${note}: uploaded and created again`,
            );
            recreated++;
          }
        }
        return { downloads, recreated };
      })
      .immediate(); // a write: IMMEDIATE (src/ledger/statements.ts says why)
  }

  private rows(): FailedRow[] {
    // The move that failed it, and the result URL of its step's latest task that succeeded
    // (a result the service holds and charged for), when it has one.
    return stmt<[], FailedRow>(
      this.db,
      `SELECT i.id, i.rel_path AS path, i.step_index AS step, i.reason, i.input_url,
              (SELECT t.from_state FROM transitions t WHERE t.item_id = i.id AND t.to_state = 'failed' ORDER BY t.id DESC LIMIT 1) AS from_state,
              COALESCE(i.result_url,
                (SELECT a.result_url FROM attempts a WHERE a.item_id = i.id AND a.step_index = i.step_index AND a.status = 'SUCCESS'
                   AND a.result_url IS NOT NULL ORDER BY a.id DESC LIMIT 1)) AS paid_url
       FROM items i WHERE i.state = 'failed' ORDER BY i.id`,
    ).all();
  }
}
