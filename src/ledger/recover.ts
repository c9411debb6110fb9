import type Database from 'better-sqlite3';
import { clock } from '../clock.js';
import type { Items } from './items.js';
import type { ItemRow } from './rows.js';
import { stmt } from './statements.js';
import { assertSubmissionTransition } from './transitions.js';

export interface RecoveryReport {
  /** Creates found still `sending`: their outcome is unknown (L2), their items held. */
  readonly ambiguous: number;
  readonly uploadsRestarted: number;
  readonly downloadsRestarted: number;
}

/**
 * Run at the start of every `darkroom run`: rows a killed run left mid-step are moved to
 * where the next run can take them safely. Uploads and downloads are repeated (they cost
 * no credit); a create that may have left the process is never repeated (L2).
 */
export function recoverStale(db: Database.Database, items: Items): RecoveryReport {
  return db
    .transaction(() => {
      const now = clock.now();
      const sending = stmt<[], { id: number; item_id: number; request_id: string }>(
        db,
        "SELECT id, item_id, request_id FROM submissions WHERE state = 'sending'",
      ).all();
      for (const s of sending) {
        assertSubmissionTransition('sending', 'ambiguous');
        stmt(db, "UPDATE submissions SET state = 'ambiguous', error = ?, resolved_ms = ? WHERE id = ?").run(
          'the run stopped while this create was in flight',
          now,
          s.id,
        );
        const item = items.get(s.item_id);
        if (item?.state === 'submitting') {
          items.move(item.id, 'submitting', 'held', {
            reason: `create outcome unknown: the run stopped while it was in flight (X-Request-Id ${s.request_id})`,
            hold_kind: 'ambiguous',
          });
        }
      }
      // A `submitting` item whose submission is resolved cannot exist (one transaction), but
      // one without any row is a crash between begin's statements: it was never sent.
      for (const item of stmt<[], ItemRow>(db, "SELECT * FROM items WHERE state = 'submitting'").all()) {
        items.move(item.id, 'submitting', 'uploaded', { due_ms: 0 }, 'recovered: create never sent');
      }
      const uploads = stmt<[], ItemRow>(db, "SELECT * FROM items WHERE state = 'uploading'").all();
      for (const item of uploads) items.move(item.id, 'uploading', 'queued', { due_ms: 0 }, 'recovered: upload restarted');
      const downloads = stmt<[], ItemRow>(db, "SELECT * FROM items WHERE state = 'downloading'").all();
      for (const item of downloads) items.move(item.id, 'downloading', 'succeeded', { due_ms: 0 }, 'recovered: download restarted');
      return { ambiguous: sending.length, uploadsRestarted: uploads.length, downloadsRestarted: downloads.length };
    })
    .immediate();
}
