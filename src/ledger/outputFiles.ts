import type Database from 'better-sqlite3';
import { clock } from '../clock.js';
import { CONTENT_CHANGED_NOTE } from './discovery.js';
import type { InputRow, Inputs } from './inputs.js';
import type { Items } from './items.js';
import type { ItemRow } from './rows.js';
import { inTransaction, stmt } from './statements.js';

/**
 * The files darkroom wrote (the `output_files` table): outputs, intermediate results and
 * sidecars, each with the photo and name it was written for. Only a file recorded here (or
 * an item's output_path) is darkroom's to write again; any other file at an output path is
 * the operator's and is never overwritten.
 */
export interface OutputFile {
  readonly path: string;
  readonly itemId: number;
  readonly inputId: number | null;
  readonly kind: 'output' | 'intermediate' | 'sidecar';
  readonly stepIndex: number | null;
  readonly bytes: number;
  /** Checksums (hex) of the file as written; absent when they were not taken. */
  readonly sha256?: string | undefined;
  readonly sha512?: string | undefined;
  /** What metadata the file carries (outputs and intermediates). */
  readonly meta?: FileMetadata | undefined;
}

/** What an output carries of its input's metadata (migration 009's columns). */
export interface FileMetadata {
  /** all / basic: the input's tags at that level with the AI disclosure; provenance: the disclosure only; none: the service's bytes. */
  readonly level: 'all' | 'basic' | 'provenance' | 'none';
  /** Why the input's metadata is not on the file, or null. */
  readonly note: string | null;
  readonly dateTaken: string | null;
  readonly caption: string | null;
  /** The file is the service's bytes as they are, its metadata in the XMP sidecar beside it (too large to rewrite; not stored: `note` says so). */
  readonly inSidecar?: true;
  /** The names of the input's XMP sidecars read into it (migrations/010_metadata_sidecars.sql), in the order read. */
  readonly sidecars?: readonly string[];
}

/**
 * What a file's metadata note says to the operator (status, the log): carried with a
 * warning when the input's tags are on the file less a damaged part (the note says which),
 * the note itself when the metadata went elsewhere (the XMP sidecar beside a file too large
 * to rewrite), else not carried.
 */
export function metadataNoteText(level: FileMetadata['level'] | null, note: string): string {
  if (level === 'all' || level === 'basic') return `metadata carried with a warning: ${note}`;
  return note.startsWith('metadata ') ? note : `metadata not carried: ${note}`;
}

/** A file darkroom wrote for a name that is no longer among the inputs (OutputFiles.goneNameFiles). */
export interface GoneNameFile {
  readonly path: string;
  readonly itemId: number;
  readonly kind: OutputFile['kind'];
  readonly stepIndex: number | null;
  readonly sha256: string | null;
  /** The name it was written for. */
  readonly name: string;
}

/** A file darkroom wrote, as the manifest and the report read it. */
export interface WrittenFileRow {
  readonly path: string;
  readonly itemId: number;
  readonly inputId: number | null;
  readonly kind: OutputFile['kind'];
  readonly stepIndex: number | null;
  readonly bytes: number;
  readonly sha256: string | null;
  readonly sha512: string | null;
  readonly meta: FileMetadata['level'] | null;
  readonly metaNote: string | null;
  /** The input's XMP sidecars read into it, one a line (null: none, or a ledger from before migrations/010_metadata_sidecars.sql). */
  readonly metaSidecars: string | null;
  readonly metaTaken: string | null;
  readonly metaCaption: string | null;
  readonly writtenMs: number;
}

export interface AttemptRecord {
  step_index: number;
  capability: string;
  attempt: number;
  task_id: string;
  business_type: string;
  status: string;
  result_url: string | null;
  started_ms: number;
  ended_ms: number | null;
}

export class OutputFiles {
  /** The columns of output_files a reader may select: a ledger opened read-only is not migrated, and may predate some. */
  private columns: string | undefined;

  constructor(
    private readonly db: Database.Database,
    private readonly items: Items,
    private readonly inputs: Inputs,
  ) {}

  /** The written-file columns as `f.` selections, with NULL for those this ledger's schema has not got yet. */
  private fileColumns(): string {
    if (this.columns === undefined) {
      const have = new Set(
        stmt<[], { name: string }>(this.db, 'PRAGMA table_info(output_files)')
          .all()
          .map((c) => c.name),
      );
      const col = (name: string, as: string) => (have.has(name) ? `f.${name} AS ${as}` : `NULL AS ${as}`);
      this.columns = [
        'f.path',
        'f.item_id AS itemId',
        'f.input_id AS inputId',
        'f.kind',
        'f.step_index AS stepIndex',
        'f.bytes',
        col('sha256', 'sha256'),
        col('sha512', 'sha512'),
        col('meta', 'meta'),
        col('meta_note', 'metaNote'),
        col('meta_sidecars', 'metaSidecars'),
        col('meta_taken', 'metaTaken'),
        col('meta_caption', 'metaCaption'),
        'f.written_ms AS writtenMs',
      ].join(', ');
    }
    return this.columns;
  }

  /** A file darkroom wrote (after its rename into place); an output also becomes its name's output. */
  recordFile(f: OutputFile): void {
    const now = clock.now();
    inTransaction(this.db, () => {
      stmt(
        this.db,
        `INSERT INTO output_files (path, item_id, input_id, kind, step_index, bytes, written_ms, steps_sig,
           sha256, sha512, meta, meta_note, meta_taken, meta_caption, meta_sidecars)
         VALUES (?, ?, ?, ?, ?, ?, ?, (SELECT steps_sig FROM items WHERE id = ?), ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (path) DO UPDATE SET item_id = excluded.item_id, input_id = excluded.input_id, kind = excluded.kind,
           step_index = excluded.step_index, bytes = excluded.bytes, written_ms = excluded.written_ms, steps_sig = excluded.steps_sig,
           sha256 = excluded.sha256, sha512 = excluded.sha512, meta = excluded.meta, meta_note = excluded.meta_note,
           meta_taken = excluded.meta_taken, meta_caption = excluded.meta_caption, meta_sidecars = excluded.meta_sidecars`,
      ).run(
        f.path,
        f.itemId,
        f.inputId,
        f.kind,
        f.stepIndex,
        f.bytes,
        now,
        f.itemId,
        f.sha256 ?? null,
        f.sha512 ?? null,
        f.meta?.level ?? null,
        f.meta?.note ?? null,
        f.meta?.dateTaken ?? null,
        f.meta?.caption ?? null,
        f.meta?.sidecars?.length ? f.meta.sidecars.join('\n') : null,
      );
      if (f.kind === 'output' && f.inputId !== null) {
        stmt(this.db, 'UPDATE inputs SET output_path = ?, written_ms = ? WHERE id = ?').run(f.path, now, f.inputId);
      }
    });
  }

  /**
   * Every file darkroom wrote that it still counts as its own, by path: outputs,
   * intermediates and sidecars (the manifest's payload).
   */
  writtenFiles(): WrittenFileRow[] {
    return stmt<[], WrittenFileRow>(this.db, `SELECT ${this.fileColumns()} FROM output_files f ORDER BY f.path`).all();
  }

  /**
   * Checksums taken now of files written before darkroom recorded them (`darkroom manifest`),
   * recorded where there is none yet, in one transaction; how many were. A decision made about
   * such an output, its SHA-256 unknown then (null), is about this very file: it is given the
   * checksum too, so that it still stands (reviews.ts STANDING).
   */
  recordChecksums(list: readonly { readonly path: string; readonly sha256: string; readonly sha512: string }[]): number {
    return inTransaction(this.db, () => {
      let n = 0;
      for (const f of list) {
        const r = stmt(this.db, 'UPDATE output_files SET sha256 = ?, sha512 = ? WHERE path = ? AND sha256 IS NULL').run(
          f.sha256,
          f.sha512,
          f.path,
        );
        if (r.changes === 0) continue;
        n++;
        // `+state`: the items by their output path (its index), not every done photo by state.
        stmt(
          this.db,
          "UPDATE reviews SET output_sha256 = ? WHERE output_sha256 IS NULL AND item_id IN (SELECT id FROM items WHERE output_path = ? AND +state = 'done')",
        ).run(f.sha256, f.path);
      }
      return n;
    });
  }

  /** The outputs of one photo with what they carry, its first output first (the report, status). */
  metadataOf(itemId: number): WrittenFileRow[] {
    return stmt<[number], WrittenFileRow>(
      this.db,
      `SELECT ${this.fileColumns()} FROM output_files f LEFT JOIN items i ON i.id = f.item_id
       WHERE f.item_id = ? AND f.kind = 'output' ORDER BY (f.path = i.output_path) DESC, f.path`,
    ).all(itemId);
  }

  /** What a file darkroom wrote carries (undefined: not one of darkroom's, or written before this was recorded). */
  fileMetadata(file: string): FileMetadata | undefined {
    const r = stmt<
      [string],
      { meta: FileMetadata['level'] | null; note: string | null; taken: string | null; caption: string | null; sidecars: string | null }
    >(
      this.db,
      'SELECT meta, meta_note AS note, meta_taken AS taken, meta_caption AS caption, meta_sidecars AS sidecars FROM output_files WHERE path = ?',
    ).get(file);
    if (!r?.meta) return undefined;
    return {
      level: r.meta,
      note: r.note,
      dateTaken: r.taken,
      caption: r.caption,
      ...(r.sidecars ? { sidecars: r.sidecars.split('\n') } : {}),
    };
  }

  /** A file recorded before its write, that the write never made (its name too long): no longer darkroom's. */
  forget(file: string): void {
    stmt(this.db, 'DELETE FROM output_files WHERE path = ?').run(file);
  }

  /** Whether darkroom wrote this file (so it may write it again). */
  isOwnFile(file: string): boolean {
    return (
      stmt(this.db, 'SELECT 1 FROM output_files WHERE path = ?').get(file) !== undefined ||
      stmt(this.db, 'SELECT 1 FROM items WHERE output_path = ?').get(file) !== undefined
    );
  }

  /**
   * Before the download stage checks who owns an output path: a file darkroom wrote for a
   * name that has since moved to this photo (its file changed) becomes this photo's, unless
   * another item claims it.
   */
  adoptOutput(item: ItemRow, file: string): ItemRow {
    const f = this.fileAt(file);
    if (!f || f.itemId !== item.id || f.kind !== 'output' || item.output_path === file) return item;
    if (stmt(this.db, 'SELECT 1 FROM items WHERE output_path = ? AND id != ?').get(file, item.id) !== undefined) return item;
    this.items.patch(item.id, item.state, { output_path: file });
    return { ...item, output_path: file };
  }

  /** Who the file at this path was written for, if darkroom wrote it. */
  fileAt(file: string): { itemId: number; inputId: number | null; kind: OutputFile['kind'] } | undefined {
    const r = stmt<[string], { item_id: number; input_id: number | null; kind: OutputFile['kind'] }>(
      this.db,
      'SELECT item_id, input_id, kind FROM output_files WHERE path = ?',
    ).get(file);
    return r ? { itemId: r.item_id, inputId: r.input_id, kind: r.kind } : undefined;
  }

  /** Outputs written for a photo, newest first. */
  outputsOf(itemId: number): { path: string; inputId: number | null }[] {
    return stmt<[number], { path: string; inputId: number | null }>(
      this.db,
      "SELECT path, input_id AS inputId FROM output_files WHERE item_id = ? AND kind = 'output' ORDER BY written_ms DESC, path",
    ).all(itemId);
  }

  /**
   * Files darkroom wrote for a name the latest discovery did not find (a file renamed or
   * moved, one of two copies removed), of photos that are done (or of one): outputs,
   * intermediates and sidecars, with the name they were written for and their checksum as written.
   */
  goneNameFiles(itemId?: number): GoneNameFile[] {
    const one = itemId === undefined ? '' : 'AND f.item_id = ?';
    return stmt<number[], GoneNameFile>(
      this.db,
      `SELECT f.path, f.item_id AS itemId, f.kind, f.step_index AS stepIndex, f.sha256, n.name FROM output_files f
       JOIN inputs n ON n.id = f.input_id JOIN items i ON i.id = f.item_id
       WHERE n.seen_gen < ? AND i.state = 'done' ${one} ORDER BY f.item_id, f.path`,
    ).all(this.inputs.generation(), ...(itemId === undefined ? [] : [itemId]));
  }

  /** The files darkroom wrote for a photo's current names, the item's own name first. */
  currentFilesOf(itemId: number): { path: string; kind: OutputFile['kind']; stepIndex: number | null; name: string }[] {
    return stmt<[number, number], { path: string; kind: OutputFile['kind']; stepIndex: number | null; name: string }>(
      this.db,
      `SELECT f.path, f.kind, f.step_index AS stepIndex, n.name FROM output_files f JOIN inputs n ON n.id = f.input_id
       WHERE f.item_id = ? AND n.seen_gen >= ? ORDER BY n.name = (SELECT rel_path FROM items WHERE id = f.item_id) DESC, n.name, f.path`,
    ).all(itemId, this.inputs.generation());
  }

  /** A photo's kept intermediates of one step, newest first. */
  intermediatesOf(itemId: number, stepIndex: number): string[] {
    return stmt<[number, number], { path: string }>(
      this.db,
      "SELECT path FROM output_files WHERE item_id = ? AND step_index = ? AND kind = 'intermediate' ORDER BY written_ms DESC, path",
    )
      .all(itemId, stepIndex)
      .map((r) => r.path);
  }

  /**
   * A file of a gone name (goneNameFiles) is no longer darkroom's: removed, or left to the
   * person who changed it. When it was the photo's own output, the photo's output becomes
   * `to` (the same result under a current name) and a decision that stood about it stands
   * about `to`: the person judged the pixels, which a rename does not change. One transaction.
   */
  retire(file: string, itemId: number, to: string): void {
    inTransaction(this.db, () => {
      const own = stmt(this.db, 'SELECT 1 FROM items WHERE id = ? AND output_path = ?').get(itemId, file) !== undefined;
      if (own) {
        stmt(
          this.db,
          `UPDATE reviews SET output_sha256 = (SELECT sha256 FROM output_files WHERE path = @to), output_path = @to
           WHERE item_id = @item AND output_sha256 IS (SELECT sha256 FROM output_files WHERE path = @file)`,
        ).run({ item: itemId, file, to });
        stmt(this.db, 'UPDATE items SET output_path = ? WHERE id = ?').run(to, itemId);
      }
      stmt(this.db, 'DELETE FROM output_files WHERE path = ?').run(file);
      stmt(this.db, 'UPDATE inputs SET output_path = NULL, written_ms = NULL WHERE output_path = ?').run(file);
    });
  }

  /**
   * Current names of photos already done that have no output yet (a rename, a duplicate
   * found later); of `inputIds` only, when given (a few names: no look at every other).
   */
  unwrittenOfDone(inputIds?: readonly number[]): { input: InputRow; item: ItemRow }[] {
    const among = inputIds === undefined ? '' : 'AND n.id IN (SELECT value FROM json_each(?))';
    const args: (number | string)[] = [this.inputs.generation(), ...(inputIds === undefined ? [] : [JSON.stringify(inputIds)])];
    const rows = stmt<(number | string)[], InputRow>(
      this.db,
      `SELECT n.* FROM inputs n JOIN items i ON i.id = n.item_id
       WHERE n.seen_gen >= ? AND n.output_path IS NULL AND i.state = 'done' ${among} ORDER BY n.item_id, n.name, n.id`,
    ).all(...args);
    return rows.map((input) => ({ input, item: this.items.get(input.item_id)! }));
  }

  /**
   * The attempts of a photo's current content (since its file last changed) under its
   * current step list (migration 008: a photo redone under new steps keeps the old tasks on
   * record, not in its sidecar), in order.
   */
  attemptsOf(itemId: number): AttemptRecord[] {
    const since =
      stmt<[number, string], { t: number | null }>(
        this.db,
        // `+to_state`: through the photo's own transitions (by item), never every photo's
        // `queued` (by state, which SQLite would otherwise pick: a read of the whole archive per output).
        "SELECT MAX(at_ms) AS t FROM transitions WHERE item_id = ? AND +to_state = 'queued' AND note LIKE ?",
      ).get(itemId, `${CONTENT_CHANGED_NOTE}%`)?.t ?? 0;
    return stmt<[number, number], AttemptRecord>(
      this.db,
      `SELECT step_index, capability, attempt, task_id, business_type, status, result_url, started_ms, ended_ms
       FROM attempts WHERE item_id = ? AND started_ms >= ?
         AND steps_sig IS (SELECT i.steps_sig FROM items i WHERE i.id = attempts.item_id) ORDER BY id`,
    ).all(itemId, since);
  }
}
