import type Database from 'better-sqlite3';
import { CONTENT_CHANGED_NOTE } from '../discovery.js';
import type { Decision } from '../reviews.js';
import { hasColumn, hasTable, stmt } from '../statements.js';

/**
 * What `darkroom manifest` lists, a page of files at a time in path order (lib/manifest.ts):
 * each file darkroom wrote, with what its line in provenance.csv says of it, read for the
 * whole page in a few queries — the photo, the name it was written for, the decision that
 * stands about the photo's output, the tasks that made it and the mode of its redo. A page
 * costs the same at a million files as at ten; nothing is held beyond it.
 */
export interface ManifestFile {
  readonly path: string;
  readonly itemId: number;
  readonly kind: 'output' | 'intermediate' | 'sidecar';
  readonly bytes: number;
  /** Checksums as written; null for a file written before darkroom recorded them (migrations/009). */
  readonly sha256: string | null;
  readonly sha512: string | null;
  readonly meta: string | null;
  readonly metaNote: string | null;
  readonly metaSidecars: string | null;
  readonly writtenMs: number;
  /** The photo (null: its item is gone from the ledger). */
  readonly relPath: string | null;
  readonly contentHash: string | null;
  readonly stepsSig: string | null;
  /** The name the file was written for, when it is one of the photo's current names. */
  readonly input: { readonly kind: 'file' | 'url'; readonly name: string; readonly src: string } | null;
  /** The photo's standing decision (review) and a rejection's reason. */
  readonly decision: Decision | null;
  readonly decisionReason: string | null;
}

/** The tasks of one photo's current content under its current steps that ended SUCCESS, in order. */
export interface ManifestTasks {
  readonly steps: readonly { readonly step: number; readonly capability: string; readonly taskId: string }[];
  /** The mode its last redo asked for (`retry --rejected --mode`), or null. */
  readonly redoMode: string | null;
}

/**
 * Files after `after` (null: from the first) in path order, at most `limit`; with
 * `acceptedOnly`, only those of photos whose output a person accepted. A ledger opened
 * read-only may predate the checksums, the metadata columns and the review: those read as null.
 */
export function readManifestPage(db: Database.Database, after: string | null, limit: number, acceptedOnly: boolean): ManifestFile[] {
  const col = (name: string, as: string) => (hasColumn(db, 'output_files', name) ? `f.${name} AS ${as}` : `NULL AS ${as}`);
  const reviews = hasTable(db, 'reviews');
  // The standing decision (ledger/reviews.ts), its output's checksum read from the file's own
  // row when the file is the photo's output, as nearly every one is (the review is newer than
  // the checksums: a ledger with one has the other).
  const decision = reviews
    ? `LEFT JOIN reviews r ON r.item_id = i.id AND i.state = 'done'
       AND r.output_sha256 IS (CASE WHEN f.path = i.output_path THEN f.sha256 ELSE (SELECT o.sha256 FROM output_files o WHERE o.path = i.output_path) END)`
    : '';
  const sql = `SELECT f.path, f.item_id AS itemId, f.kind, f.bytes, ${col('sha256', 'sha256')}, ${col('sha512', 'sha512')},
      ${col('meta', 'meta')}, ${col('meta_note', 'metaNote')}, ${col('meta_sidecars', 'metaSidecars')}, f.written_ms AS writtenMs,
      i.rel_path AS relPath, i.content_hash AS contentHash, i.steps_sig AS stepsSig,
      n.kind AS inputKind, n.name AS inputName, n.src AS inputSrc,
      ${reviews ? 'r.decision, r.reason AS decisionReason' : 'NULL AS decision, NULL AS decisionReason'}
    FROM output_files f LEFT JOIN items i ON i.id = f.item_id
    LEFT JOIN inputs n ON n.id = f.input_id AND n.item_id = f.item_id
      AND n.seen_gen >= COALESCE((SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'inputs.generation'), 0)
    ${decision}
    WHERE f.path > ? ${acceptedOnly ? (reviews ? "AND r.decision = 'accept'" : 'AND 0') : ''}
    ORDER BY f.path LIMIT ?`;
  type Row = Omit<ManifestFile, 'input'> & { inputKind: 'file' | 'url' | null; inputName: string | null; inputSrc: string | null };
  return stmt<[string, number], Row>(db, sql)
    .all(after ?? '', limit)
    .map(({ inputKind, inputName, inputSrc, ...r }) => ({
      ...r,
      input: inputKind === null ? null : { kind: inputKind, name: inputName!, src: inputSrc! },
    }));
}

/**
 * Per photo of `itemIds`: the tasks of its current content (since its file last changed) under
 * its current step list that ended SUCCESS, in order (OutputFiles.attemptsOf, for a page at
 * once), and the mode of its last redo.
 */
export function readManifestTasks(db: Database.Database, itemIds: readonly number[]): Map<number, ManifestTasks> {
  const ids = JSON.stringify([...new Set(itemIds)]);
  const out = new Map<number, ManifestTasks>();
  if (itemIds.length === 0) return out;
  // `+t.to_state`: the transitions by item (their index), not every photo's `queued` by state.
  const rows = stmt<[string, string], { itemId: number; step: number; capability: string; taskId: string }>(
    db,
    `SELECT a.item_id AS itemId, a.step_index AS step, a.capability, a.task_id AS taskId
     FROM attempts a JOIN items i ON i.id = a.item_id
     WHERE a.item_id IN (SELECT value FROM json_each(?)) AND a.status = 'SUCCESS' AND a.steps_sig IS i.steps_sig
       AND a.started_ms >= COALESCE((SELECT MAX(t.at_ms) FROM transitions t
         WHERE t.item_id = a.item_id AND +t.to_state = 'queued' AND t.note LIKE ?), 0)
     ORDER BY a.item_id, a.id`,
  ).all(ids, `${CONTENT_CHANGED_NOTE}%`);
  const modes = new Map<number, string | null>();
  if (hasTable(db, 'review_log')) {
    for (const m of stmt<[string], { itemId: number; mode: string | null }>(
      db,
      `SELECT item_id AS itemId, mode FROM review_log WHERE id IN (
         SELECT MAX(id) FROM review_log WHERE action = 'redo' AND item_id IN (SELECT value FROM json_each(?)) GROUP BY item_id)`,
    ).all(ids)) {
      modes.set(m.itemId, m.mode);
    }
  }
  const steps = new Map<number, ManifestTasks['steps'][number][]>();
  for (const r of rows) {
    let list = steps.get(r.itemId);
    if (!list) steps.set(r.itemId, (list = []));
    list.push({ step: r.step, capability: r.capability, taskId: r.taskId });
  }
  for (const id of new Set(itemIds)) out.set(id, { steps: steps.get(id) ?? [], redoMode: modes.get(id) ?? null });
  return out;
}
