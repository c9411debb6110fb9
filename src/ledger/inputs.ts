import type Database from 'better-sqlite3';
import { inTransaction, stmt } from './statements.js';
import { clock } from '../clock.js';
import type { ItemRow } from './rows.js';
import { inPhase, sqlList } from './transitions.js';

/**
 * The names photos go by (the `inputs` table, migrations/003_input_identity.sql): one row
 * per file path or URL line, pointing at the item of its content. A discovery
 * (discovery.ts) stamps the names it saw with its generation; the current names are those
 * of the latest one.
 */
export interface InputRow {
  id: number;
  key: string;
  kind: 'file' | 'url';
  name: string;
  src: string;
  item_id: number;
  content_hash: string;
  size_bytes: number | null;
  mtime_ms: number | null;
  seen_gen: number;
  out_dir: string | null;
  out_name: string | null;
  naming: string | null;
  output_path: string | null;
  written_ms: number | null;
  created_ms: number;
}

const GENERATION_KEY = 'inputs.generation';

export class Inputs {
  constructor(private readonly db: Database.Database) {}

  /** The hash recorded for a file name when its size and mtime are unchanged, so a rerun reads no bytes. */
  cachedHash(name: string, sizeBytes: number, mtimeMs: number | null): string | undefined {
    if (mtimeMs === null) return undefined;
    const r = stmt<[string, number, number], { content_hash: string }>(
      this.db,
      "SELECT content_hash FROM inputs WHERE key = ? AND size_bytes = ? AND mtime_ms = ? AND content_hash NOT LIKE '%:%'",
    ).get(`f:${name}`, sizeBytes, mtimeMs);
    return r?.content_hash;
  }

  /** Whether a file of this name under input.dir was ever recorded (whatever its content). */
  hasFile(name: string): boolean {
    return stmt<[string]>(this.db, 'SELECT 1 FROM inputs WHERE key = ?').get(`f:${name}`) !== undefined;
  }

  /** Whether this line of the URL list (its URL and name) was ever recorded. */
  hasUrl(url: string, name: string): boolean {
    return stmt<[string]>(this.db, 'SELECT 1 FROM inputs WHERE key = ?').get(`u:${url}\n${name}`) !== undefined;
  }

  /** The discovery generation: names seen in it are the current ones. 0 before any. */
  generation(): number {
    const r = stmt<[string], { value: string }>(this.db, 'SELECT value FROM meta WHERE key = ?').get(GENERATION_KEY);
    return r ? Number(r.value) : 0;
  }

  /** Start the next discovery generation; returns its number. */
  beginGeneration(): number {
    const gen = this.generation() + 1;
    stmt(this.db, 'INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(
      GENERATION_KEY,
      String(gen),
    );
    return gen;
  }

  /** Names found by the latest discovery, in a stable order (files by path, then URL lines). */
  currentInputs(): InputRow[] {
    return stmt<[number], InputRow>(this.db, "SELECT * FROM inputs WHERE seen_gen = ? ORDER BY kind = 'url', name, id").all(
      this.generation(),
    );
  }

  /** The current names of one photo, in the same order. */
  inputsOf(itemId: number): InputRow[] {
    return stmt<[number, number], InputRow>(
      this.db,
      "SELECT * FROM inputs WHERE item_id = ? AND seen_gen = ? ORDER BY kind = 'url', name, id",
    ).all(itemId, this.generation());
  }

  /**
   * Output names given under `naming`, all in one transaction: a first discovery names every
   * photo, and one commit each (an fsync each on a real disk) made naming 100,000 photos take
   * longer than finding them.
   */
  setOutputNames(names: readonly { readonly inputId: number; readonly dir: string; readonly name: string }[], naming: string): void {
    if (names.length === 0) return;
    inTransaction(this.db, () => {
      const update = stmt(this.db, 'UPDATE inputs SET out_dir = ?, out_name = ?, naming = ? WHERE id = ?');
      for (const n of names) update.run(n.dir, n.name, naming, n.inputId);
    });
  }
}

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
