import type Database from 'better-sqlite3';
import { inTransaction, stmt } from './statements.js';

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
