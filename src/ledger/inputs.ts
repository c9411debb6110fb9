import type Database from 'better-sqlite3';
import { inTransaction, stmt } from './statements.js';
import { clock } from '../clock.js';
import type { ItemRow } from './rows.js';
import { inPhase, sqlList } from './transitions.js';

/**
 * The names photos go by (the `inputs` table, migrations/003_input_identity.sql): one row
 * per file path or URL line, pointing at the item of its content. A discovery
 * (discovery.ts) stamps the names it saw with its generation; the current names are those
 * of the latest complete one, and those a discovery still under way has seen again or found
 * (a run works while its discovery goes on: § Flow).
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
  /** The key collisions of output names are judged by (outputs/naming.ts), migrations/012_output_keys.sql. */
  out_key: string | null;
  output_path: string | null;
  written_ms: number | null;
  created_ms: number;
}

/** The latest discovery that saw every name (one interrupted records what it saw, and completes nothing). */
const GENERATION_KEY = 'inputs.generation';
/** The latest generation begun: a discovery killed half way never lends its number to the next. */
const BEGUN_KEY = 'inputs.generation.begun';

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

  /**
   * Whether a file of this name under input.dir is a current name: whatever its content, or
   * (`stamp`) recorded with this size and mtime (whole ms), so nothing about it is new.
   */
  hasFile(name: string, stamp?: { readonly size: number; readonly mtimeMs: number }): boolean {
    if (stamp === undefined) return this.isCurrent(`f:${name}`);
    return (
      stmt(this.db, 'SELECT 1 FROM inputs WHERE key = ? AND size_bytes = ? AND mtime_ms = ? AND seen_gen >= ?').get(
        `f:${name}`,
        stamp.size,
        stamp.mtimeMs,
        this.generation(),
      ) !== undefined
    );
  }

  /** Of these file names under input.dir, the ones that are current names: one query for a folder's listing. */
  currentFiles(names: readonly string[]): Set<string> {
    if (names.length === 0) return new Set();
    const rows = stmt<[string, number], { key: string }>(
      this.db,
      "SELECT key FROM inputs WHERE key IN (SELECT 'f:' || value FROM json_each(?)) AND seen_gen >= ?",
    ).all(JSON.stringify(names), this.generation());
    return new Set(rows.map((r) => r.key.slice(2)));
  }

  /** Whether this line of the URL list (its URL and name) is a current name. */
  hasUrl(url: string, name: string): boolean {
    return this.isCurrent(`u:${url}\n${name}`);
  }

  private isCurrent(key: string): boolean {
    return stmt(this.db, 'SELECT 1 FROM inputs WHERE key = ? AND seen_gen >= ?').get(key, this.generation()) !== undefined;
  }

  /** Whether the discovery `gen` has recorded the name `key` (an earlier batch of it). */
  seenIn(key: string, gen: number): boolean {
    return stmt(this.db, 'SELECT 1 FROM inputs WHERE key = ? AND seen_gen = ?').get(key, gen) !== undefined;
  }

  /** The latest complete discovery's generation: names seen in it (or since) are the current ones. 0 before any. */
  generation(): number {
    return this.meta(GENERATION_KEY);
  }

  /** Start the next discovery generation; returns its number. Names it sees are current at once. */
  beginGeneration(): number {
    const gen = Math.max(this.generation(), this.meta(BEGUN_KEY)) + 1;
    this.setMeta(BEGUN_KEY, gen);
    return gen;
  }

  /** The discovery `gen` saw every name: names it did not see are no longer current. */
  completeGeneration(gen: number): void {
    this.setMeta(GENERATION_KEY, gen);
  }

  private meta(key: string): number {
    const r = stmt<[string], { value: string }>(this.db, 'SELECT value FROM meta WHERE key = ?').get(key);
    return r ? Number(r.value) : 0;
  }

  private setMeta(key: string, value: number): void {
    stmt(this.db, 'INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(
      key,
      String(value),
    );
  }

  /** The current names of one photo, in a stable order (files by path, then URL lines). */
  inputsOf(itemId: number): InputRow[] {
    return stmt<[number, number], InputRow>(
      this.db,
      "SELECT * FROM inputs WHERE item_id = ? AND seen_gen >= ? ORDER BY kind = 'url', name, id",
    ).all(itemId, this.generation());
  }

  /** Rows by id, in the order names are given output names (files by path, then URL lines). */
  byIds(ids: readonly number[]): InputRow[] {
    const out: InputRow[] = [];
    const get = stmt<[number], InputRow>(this.db, 'SELECT * FROM inputs WHERE id = ?');
    for (const id of ids) {
      const r = get.get(id);
      if (r) out.push(r);
    }
    return out.sort((a, b) => (a.kind === b.kind ? (a.name < b.name ? -1 : a.name > b.name ? 1 : a.id - b.id) : a.kind === 'url' ? 1 : -1));
  }

  /**
   * Output names given under `naming`, all in one transaction: a first discovery names every
   * photo, and one commit each (an fsync each on a real disk) made naming 100,000 photos take
   * longer than finding them.
   */
  setOutputNames(
    names: readonly { readonly inputId: number; readonly dir: string; readonly name: string; readonly key: string }[],
    naming: string,
  ): void {
    if (names.length === 0) return;
    inTransaction(this.db, () => {
      const update = stmt(this.db, 'UPDATE inputs SET out_dir = ?, out_name = ?, out_key = ?, naming = ? WHERE id = ?');
      for (const n of names) update.run(n.dir, n.name, n.key, naming, n.inputId);
    });
  }

  /** Keys of names given before they were kept (migration 012). */
  setOutputKeys(keys: readonly { readonly inputId: number; readonly key: string }[]): void {
    if (keys.length === 0) return;
    inTransaction(this.db, () => {
      const update = stmt(this.db, 'UPDATE inputs SET out_key = ? WHERE id = ?');
      for (const k of keys) update.run(k.key, k.inputId);
    });
  }

  /** The latest generation a current name holding output key `key` under `naming` (other than row `id`) was seen in; undefined when none holds it. */
  keyHolder(key: string, naming: string, id: number): number | undefined {
    const r = stmt<[string, string, number, number], { gen: number | null }>(
      this.db,
      'SELECT MAX(seen_gen) AS gen FROM inputs WHERE out_key = ? AND naming = ? AND id != ? AND seen_gen >= ?',
    ).get(key, naming, id, this.generation());
    return r?.gen ?? undefined;
  }

  /**
   * Current names without an output name under `naming` (or named before their key was
   * kept), in naming order, a chunk at a time: on a ledger of a million names there are few
   * once each discovery batch named its own.
   */
  *unnamed(naming: string, chunk = 5000): Generator<InputRow[]> {
    const ids = stmt<[number, string], { id: number }>(
      this.db,
      "SELECT id FROM inputs WHERE seen_gen >= ? AND (naming IS NOT ? OR out_name IS NULL OR out_key IS NULL) ORDER BY kind = 'url', name, id",
    )
      .all(this.generation(), naming)
      .map((r) => r.id);
    for (let i = 0; i < ids.length; i += chunk) yield this.byIds(ids.slice(i, i + chunk));
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
