import type Database from 'better-sqlite3';
import { clock } from '../clock.js';
import type { InputRow, Inputs } from './inputs.js';
import type { Items } from './items.js';
import { FIRST_STEP, type ItemRow } from './rows.js';
import { stmt } from './statements.js';
import { assertEntry, assertTransition, type ItemState } from './transitions.js';

/**
 * What a discovery found, reconciled with what the ledger knows (inputs identified by their
 * content, migrations/003_input_identity.sql). An item is one distinct photo; `inputs`
 * holds every name it goes by (inputs.ts); the files written for them are outputFiles.ts's.
 * One transaction:
 *
 * - a name whose content is already an item's joins that item (a duplicate, a rename):
 *   nothing is uploaded or created for it, its output is written from the item's result;
 * - a name whose content changed gets an item for the new content: its old item is reset
 *   in place (back to queued, step 1) when nothing else uses it and it is not in flight,
 *   else a new item is made; a change seen while the old content's task is in flight waits
 *   for the next run, so a task already paid for is never abandoned;
 * - a URL (input.urls) is its own identity: it needs no upload and starts as `uploaded`.
 *
 * Over 300 lines on purpose: these rules are one transaction over one set of names, and
 * read best together.
 */

export interface FoundFile {
  /** Path under input.dir, with '/'. */
  readonly name: string;
  /** Absolute path. */
  readonly src: string;
  readonly sizeBytes: number;
  readonly mtimeMs: number | null;
  /** SHA-256 of the bytes, hex; `empty:`/`unreadable:` + name when the bytes cannot identify it. */
  readonly contentHash: string;
  readonly skipReason: string | null;
}

export interface FoundUrl {
  readonly url: string;
  /** The output name (CSV column, or made from the URL). */
  readonly name: string;
  /** `url:` + SHA-256 of the URL. */
  readonly contentHash: string;
}

export interface ReconcileOptions {
  /** Lanes a URL input may be given to (it skips the upload, which is where a lane claims a file). */
  readonly keyFps: readonly string[];
  /**
   * Names found since the last whole discovery (a followed folder's new files): they join
   * its generation, and no other name is marked gone for being absent from them.
   */
  readonly addOnly?: boolean;
}

export interface ReconcileReport {
  /** Names found (files and URL lines). */
  readonly names: number;
  /** Distinct photos among them. */
  readonly distinct: number;
  /** Items made for content the ledger had never seen. */
  readonly added: number;
  /** Names whose content changed since the last run, set to be processed again. */
  readonly changed: number;
  /** Changed names left for a later run because the old content's task is still in flight. */
  readonly deferred: number;
  /** Names that share their content with an earlier name. */
  readonly duplicates: number;
  /** Skipped items whose reason no longer applies (a config change), queued again. */
  readonly requeued: number;
  /** Photos whose every name disappeared since the last discovery, before they were done (markGone, below). */
  readonly gone: number;
  /** Gone photos found again. */
  readonly back: number;
}

/** The note of the transition that resets an item whose file changed; sidecars count attempts from it. */
export const CONTENT_CHANGED_NOTE = 'content changed';

/** States an item whose content changed may be reset from: nothing of the old content is in flight. */
const RESETTABLE: ReadonlySet<ItemState> = new Set(['done', 'failed', 'skipped', 'queued', 'gone']);

type Entry =
  | {
      kind: 'file';
      key: string;
      name: string;
      src: string;
      label: string;
      hash: string;
      size: number | null;
      mtime: number | null;
      skipReason: string | null;
    }
  | { kind: 'url'; key: string; name: string; src: string; label: string; hash: string; size: null; mtime: null; skipReason: null };

export class Discovery {
  constructor(
    private readonly db: Database.Database,
    private readonly items: Items,
    private readonly inputs: Inputs,
  ) {}

  /** Record what a discovery found; see the class comment for the rules. One transaction. */
  reconcile(files: readonly FoundFile[], urls: readonly FoundUrl[], opts: ReconcileOptions): ReconcileReport {
    return this.db.transaction(() => this.reconcileTx(files, urls, opts)).immediate();
  }

  private reconcileTx(files: readonly FoundFile[], urls: readonly FoundUrl[], opts: ReconcileOptions): ReconcileReport {
    const now = clock.now();
    const gen = opts.addOnly ? this.inputs.generation() : this.inputs.beginGeneration();

    const { unique, groups } = byContent(files, urls);
    const present = new Set(groups.keys());
    const claimed = new Set<number>();
    const touched = new Map<number, Entry[]>();
    let added = 0;
    let changed = 0;
    let deferred = 0;
    let duplicates = 0;
    let requeued = 0;
    let urlOrdinal = 0;

    for (const [hash, group] of groups) {
      const first = group[0]!;
      let live = group;
      let item = this.byHash(hash);
      if (!item && first.kind === 'file') item = this.adoptLegacy(group, hash, claimed);
      if (!item) {
        // New content. Names that had other content before: reuse their old item when
        // nothing else needs it; leave them alone while its old content is in flight.
        const previous = group.map((e) => ({ e, row: this.row(e.key) })).filter((p) => p.row !== undefined);
        const inFlight = previous.filter((p) => {
          const old = this.items.get(p.row!.item_id);
          return old !== undefined && !RESETTABLE.has(old.state);
        });
        for (const p of inFlight) {
          stmt(this.db, 'UPDATE inputs SET seen_gen = ? WHERE id = ?').run(gen, p.row!.id);
          this.addTouched(touched, p.row!.item_id, p.e);
          deferred++;
        }
        live = group.filter((e) => !inFlight.some((p) => p.e === e));
        if (live.length === 0) continue;
        const changedNames = live.filter((e) => previous.some((p) => p.e === e)).length;
        const reusable = previous
          .filter((p) => !inFlight.includes(p))
          .map((p) => this.items.get(p.row!.item_id)!)
          .find(
            (old) =>
              old.content_hash !== null &&
              !old.content_hash.startsWith('url:') &&
              !present.has(old.content_hash) &&
              // Names found since the last whole discovery: the old content may still be another name's.
              !(opts.addOnly && this.namedElsewhere(old.id, gen, live)) &&
              !claimed.has(old.id) &&
              RESETTABLE.has(old.state),
          );
        if (reusable) item = this.resetItem(reusable, live[0]!, hash);
        else item = this.insertItem(live[0]!, opts.keyFps, urlOrdinal);
        if (!reusable && live[0]!.kind === 'url') urlOrdinal++;
        if (changedNames > 0) changed += changedNames;
        else added++;
      }
      claimed.add(item.id);
      for (const e of live) {
        this.upsertRow(e, item.id, gen, now);
        this.addTouched(touched, item.id, e);
      }
      duplicates += live.length - 1;
    }

    // Labels (items.rel_path: what status shows) and source paths follow the current names.
    for (const [itemId, list] of touched) this.followNames(itemId, list);

    // A photo that was gone and is found again is back where it was (then looked at below).
    let back = 0;
    for (const itemId of touched.keys()) if (bringBack(this.db, this.items, itemId)) back++;

    // A skip reason that no longer holds (say transcode turned on) queues the photo again,
    // and one that now holds (transcode turned off) skips a photo not yet started.
    for (const [itemId, list] of touched) {
      const item = this.items.get(itemId)!;
      const own = list.filter((e) => e.hash === item.content_hash);
      // Names of one content share its reasons, except one a name has alone (a second link
      // to the same file): the photo is refused only when every name is.
      const reason = own.length > 0 && own.every((e) => e.skipReason !== null) ? own[0]!.skipReason : null;
      if (item.state === 'skipped' && reason === null && own.length > 0) {
        this.items.move(item.id, 'skipped', 'queued', { reason: null, due_ms: 0, retries: 0 }, 'input accepted now');
        requeued++;
      } else if (item.state === 'queued' && reason !== null) {
        this.items.move(item.id, 'queued', 'skipped', { reason }, reason);
      }
    }

    const gone = opts.addOnly ? 0 : markGone(this.db, this.items, gen);
    this.reassignUrlLanes(opts.keyFps);
    const distinct = new Set([...touched.keys()]).size;
    return { names: unique.length, distinct, added, changed, deferred, duplicates, requeued, gone, back };
  }

  private addTouched(touched: Map<number, Entry[]>, itemId: number, e: Entry): void {
    const list = touched.get(itemId);
    if (list) list.push(e);
    else touched.set(itemId, [e]);
  }

  /** Whether a current name (of discovery `gen`) other than `names` goes by this item. */
  private namedElsewhere(itemId: number, gen: number, names: readonly Entry[]): boolean {
    const keys = new Set(names.map((e) => e.key));
    return stmt<[number, number], { key: string }>(this.db, 'SELECT key FROM inputs WHERE item_id = ? AND seen_gen = ?')
      .all(itemId, gen)
      .some((r) => !keys.has(r.key));
  }

  private row(key: string): InputRow | undefined {
    return stmt<[string], InputRow>(this.db, 'SELECT * FROM inputs WHERE key = ?').get(key);
  }

  private byHash(hash: string): ItemRow | undefined {
    return stmt<[string], ItemRow>(this.db, 'SELECT * FROM items WHERE content_hash = ?').get(hash);
  }

  /** An item of a version-1 ledger (no hash yet) under the same path is this photo: it keeps its progress. */
  private adoptLegacy(group: readonly Entry[], hash: string, claimed: ReadonlySet<number>): ItemRow | undefined {
    for (const e of group) {
      const legacy = stmt<[string], ItemRow>(this.db, 'SELECT * FROM items WHERE rel_path = ? AND content_hash IS NULL').get(e.name);
      if (legacy && !claimed.has(legacy.id) && !this.hasInputs(legacy.id)) {
        stmt(this.db, 'UPDATE items SET content_hash = ? WHERE id = ?').run(hash, legacy.id);
        return this.items.get(legacy.id);
      }
    }
    return undefined;
  }

  private hasInputs(itemId: number): boolean {
    return stmt(this.db, 'SELECT 1 FROM inputs WHERE item_id = ? LIMIT 1').get(itemId) !== undefined;
  }

  private insertItem(e: Entry, keyFps: readonly string[], ordinal: number): ItemRow {
    const now = clock.now();
    this.freeLabel(e.label, -1);
    if (e.kind === 'url' && keyFps.length > 0) {
      // Nothing to upload: the URL is the step-1 input. It goes to a lane at once (that is
      // where a file is claimed, by its upload), spread over the keys in list order.
      const fp = keyFps[ordinal % keyFps.length]!;
      const r = stmt(
        this.db,
        `INSERT INTO items (rel_path, src_path, size_bytes, content_hash, state, key_fp, image_url, input_url, due_ms, created_ms, updated_ms)
         VALUES (?, ?, NULL, ?, 'uploaded', ?, ?, ?, 0, ?, ?)`,
      ).run(e.label, e.src, e.hash, fp, e.src, e.src, now, now);
      const id = Number(r.lastInsertRowid);
      this.transition(id, null, 'uploaded', 'URL input: nothing to upload');
      return this.items.get(id)!;
    }
    const r = stmt(
      this.db,
      `INSERT INTO items (rel_path, src_path, size_bytes, content_hash, state, created_ms, updated_ms)
       VALUES (?, ?, ?, ?, 'queued', ?, ?)`,
    ).run(e.label, e.src, e.size, e.hash, now, now);
    const id = Number(r.lastInsertRowid);
    this.transition(id, null, 'queued', null);
    if (e.skipReason) this.items.move(id, 'queued', 'skipped', { reason: e.skipReason }, e.skipReason);
    return this.items.get(id)!;
  }

  /** The photo under this name changed and its old item is free: process it again from step 1. */
  private resetItem(old: ItemRow, e: Entry, hash: string): ItemRow {
    const patch = {
      content_hash: hash,
      size_bytes: e.size,
      src_path: e.src,
      ...FIRST_STEP,
      key_fp: null,
      image_url: null,
      input_url: null,
    };
    const note = `${CONTENT_CHANGED_NOTE}: ${e.name}`;
    if (old.state === 'queued') {
      this.items.patch(old.id, 'queued', patch);
      return this.items.get(old.id)!;
    }
    return this.items.move(old.id, old.state, 'queued', patch, note);
  }

  private upsertRow(e: Entry, itemId: number, gen: number, now: number): void {
    const existing = this.row(e.key);
    if (!existing) {
      stmt(
        this.db,
        `INSERT INTO inputs (key, kind, name, src, item_id, content_hash, size_bytes, mtime_ms, seen_gen, created_ms)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ).run(e.key, e.kind, e.name, e.src, itemId, e.hash, e.size, e.mtime, gen, now);
      return;
    }
    // A name that now belongs to another photo has no output of that photo yet, and its
    // old photo no longer owns the file it had written for it.
    const moved = existing.item_id !== itemId;
    if (moved && existing.output_path !== null) {
      stmt(
        this.db,
        `UPDATE items SET output_path = (SELECT output_path FROM inputs WHERE item_id = @old AND id != @row AND output_path IS NOT NULL ORDER BY id LIMIT 1)
         WHERE id = @old AND output_path = @path`,
      ).run({ old: existing.item_id, row: existing.id, path: existing.output_path });
      stmt(this.db, "UPDATE output_files SET item_id = @item WHERE path = @path AND kind = 'output'").run({
        path: existing.output_path,
        item: itemId,
      });
    }
    stmt(
      this.db,
      `UPDATE inputs SET src = ?, item_id = ?, content_hash = ?, size_bytes = ?, mtime_ms = ?, seen_gen = ?,
         output_path = CASE WHEN ? THEN NULL ELSE output_path END,
         written_ms = CASE WHEN ? THEN NULL ELSE written_ms END
       WHERE id = ?`,
    ).run(e.src, itemId, e.hash, e.size, e.mtime, gen, moved ? 1 : 0, moved ? 1 : 0, existing.id);
  }

  /** Keep an item's label and source among its current names (a rename moves both). */
  private followNames(itemId: number, list: readonly Entry[]): void {
    const item = this.items.get(itemId)!;
    const own = list.filter((e) => e.hash === item.content_hash);
    if (own.length === 0) return;
    const keep = own.find((e) => e.label === item.rel_path);
    const target = keep ?? own[0]!;
    if (!keep) this.freeLabel(target.label, itemId);
    if (item.rel_path !== target.label || item.src_path !== target.src) {
      stmt(this.db, 'UPDATE items SET rel_path = ?, src_path = ? WHERE id = ?').run(target.label, target.src, itemId);
    }
  }

  /** Make a label free for `forItem` by moving whichever other item holds it to a label of its own. */
  private freeLabel(label: string, forItem: number): void {
    const holder = stmt<[string], ItemRow>(this.db, 'SELECT * FROM items WHERE rel_path = ?').get(label);
    if (!holder || holder.id === forItem) return;
    const gen = this.inputs.generation();
    const names = stmt<[number, number], { name: string; src: string; kind: string }>(
      this.db,
      'SELECT name, src, kind FROM inputs WHERE item_id = ? AND seen_gen = ? ORDER BY id',
    ).all(holder.id, gen);
    for (const n of names) {
      const l = n.kind === 'url' ? n.src : n.name;
      if (l !== label && !this.labelTaken(l)) {
        stmt(this.db, 'UPDATE items SET rel_path = ?, src_path = ? WHERE id = ?').run(l, n.src, holder.id);
        return;
      }
    }
    let alt = `${label} (#${holder.id})`;
    for (let i = 2; this.labelTaken(alt); i++) alt = `${label} (#${holder.id}.${i})`;
    stmt(this.db, 'UPDATE items SET rel_path = ? WHERE id = ?').run(alt, holder.id);
  }

  private labelTaken(label: string): boolean {
    return stmt(this.db, 'SELECT 1 FROM items WHERE rel_path = ?').get(label) !== undefined;
  }

  /** A URL input waiting for its first create belongs to a lane that may not run any more (a key changed). */
  private reassignUrlLanes(keyFps: readonly string[]): void {
    if (keyFps.length === 0) return;
    const marks = keyFps.map(() => '?').join(',');
    const stale = stmt<string[], { id: number }>(
      this.db,
      `SELECT i.id FROM items i WHERE i.state = 'uploaded' AND i.step_index = 0 AND i.content_hash LIKE 'url:%'
         AND (i.key_fp IS NULL OR i.key_fp NOT IN (${marks})) ORDER BY i.id`,
    ).all(...keyFps);
    stale.forEach((s, n) => this.items.patch(s.id, 'uploaded', { key_fp: keyFps[n % keyFps.length]! }));
  }

  private transition(id: number, from: ItemState | null, to: ItemState, note: string | null): void {
    if (from === null) assertEntry(to);
    else assertTransition(from, to);
    stmt(this.db, 'INSERT INTO transitions (item_id, at_ms, from_state, to_state, note) VALUES (?, ?, ?, ?, ?)').run(
      id,
      clock.now(),
      from,
      to,
      note,
    );
  }
}

/**
 * Photos whose every name has disappeared from the inputs since the last discovery: their files were deleted, moved out of input.dir, or their URL lines taken
 * out of the list. One not yet started, skipped or failed is moved to `gone`: nothing is
 * left to do for it, so it is neither pending forever nor a failure to report, and `status`
 * counts it apart. A photo that is done, held or in flight keeps its state: its output is
 * written, or money is in question, or its task runs on the service's copy.
 *
 * When a name of the same content is found again, the photo goes back to the state it was
 * gone from (a skipped photo is then looked at again like any other, a failed one waits for
 * `retry` as before), with the note BACK_NOTE.
 */

const GONE_NOTE = 'input gone';
const BACK_NOTE = 'input back';

/** The states a photo is marked gone from; it returns to the same one. */
const GONE_FROM: readonly ItemState[] = ['queued', 'skipped', 'failed'];

/**
 * Move to `gone` every photo in GONE_FROM with names recorded but none seen by discovery
 * `gen`. Items with no names at all (made before identities, or by tests) are left alone.
 */
function markGone(db: Database.Database, items: Items, gen: number): number {
  const rows = stmt<[number], { id: number; state: ItemState }>(
    db,
    `SELECT i.id, i.state FROM items i
     WHERE i.state IN (${GONE_FROM.map((s) => `'${s}'`).join(', ')})
       AND EXISTS (SELECT 1 FROM inputs n WHERE n.item_id = i.id)
       AND NOT EXISTS (SELECT 1 FROM inputs n WHERE n.item_id = i.id AND n.seen_gen = ?)
     ORDER BY i.id`,
  ).all(gen);
  for (const r of rows) items.move(r.id, r.state, 'gone', {}, GONE_NOTE);
  return rows.length;
}

/** A gone photo found again: back to the state it was gone from. Returns whether it was gone. */
function bringBack(db: Database.Database, items: Items, itemId: number): boolean {
  const item = items.get(itemId);
  if (item?.state !== 'gone') return false;
  const last = stmt<[number], { from_state: ItemState | null }>(
    db,
    "SELECT from_state FROM transitions WHERE item_id = ? AND to_state = 'gone' ORDER BY id DESC LIMIT 1",
  ).get(itemId);
  const to = last?.from_state && GONE_FROM.includes(last.from_state) ? last.from_state : 'queued';
  items.move(itemId, 'gone', to, to === 'queued' ? { due_ms: 0, retries: 0 } : {}, BACK_NOTE);
  return true;
}

/** Every name found, once (a URL line by its URL and name), grouped by content in a stable order: files by path, then URL lines as listed. */
function byContent(files: readonly FoundFile[], urls: readonly FoundUrl[]): { unique: Entry[]; groups: Map<string, Entry[]> } {
  const entries: Entry[] = [
    ...files.map((f): Entry => ({
      kind: 'file',
      key: `f:${f.name}`,
      name: f.name,
      src: f.src,
      label: f.name,
      hash: f.contentHash,
      size: f.sizeBytes,
      mtime: f.mtimeMs,
      skipReason: f.skipReason,
    })),
    ...urls.map((u): Entry => ({
      kind: 'url',
      key: `u:${u.url}\n${u.name}`,
      name: u.name,
      src: u.url,
      label: u.url,
      hash: u.contentHash,
      size: null,
      mtime: null,
      skipReason: null,
    })),
  ];
  const seenKeys = new Set<string>();
  const unique = entries.filter((e) => (seenKeys.has(e.key) ? false : (seenKeys.add(e.key), true)));

  // Group by content, in a stable order (files by path, then URL lines as listed).
  const groups = new Map<string, Entry[]>();
  for (const e of unique) {
    const g = groups.get(e.hash);
    if (g) g.push(e);
    else groups.set(e.hash, [e]);
  }
  return { unique, groups };
}
