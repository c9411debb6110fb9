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
 * A run records what its discovery finds in batches while the lanes work (a DiscoveryPass,
 * one transaction a batch): each batch's photos are the lanes' at once. What only the whole
 * discovery can tell waits for its end (`DiscoveryPass.end`, one transaction): whether a
 * changed name's old photo is found elsewhere (so may not be reset), which names are gone,
 * and a photo's label when its own name was not seen again yet. `reconcile` is one pass of
 * one batch, in one transaction. A followed folder's new names (`run --follow`) are a pass of
 * their own after a complete discovery (Discovery.follow): add-only, each batch final.
 *
 * Over 300 lines on purpose: these rules are one set of names reconciled, and read best together.
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

/** What one batch of a discovery did: its share of the report, and the rows of the names it recorded (they get their output names: outputs/naming.ts). */
export interface BatchReport extends Omit<ReconcileReport, 'distinct' | 'gone'> {
  readonly inputIds: readonly number[];
}

type Counts = { -readonly [K in keyof Omit<ReconcileReport, 'distinct' | 'gone'>]: number };

/** One batch under way: its groups, the photos it claimed and touched, its counts. */
interface Batch {
  readonly groups: ReadonlyMap<string, Entry[]>;
  readonly claimed: Set<number>;
  readonly touched: Map<number, { list: Entry[]; earlier: boolean }>;
  readonly c: Counts;
  /** The end of the discovery, or a followed folder's pass (Discovery.follow): nothing waits. */
  readonly final: boolean;
  readonly keyFps: readonly string[];
  /** The names the batch records: a name of a photo recorded before them is another name. */
  readonly keys: ReadonlySet<string>;
}

const zero = (): Counts => ({ names: 0, added: 0, changed: 0, deferred: 0, duplicates: 0, requeued: 0, back: 0 });

export class Discovery {
  constructor(
    private readonly db: Database.Database,
    private readonly items: Items,
    private readonly inputs: Inputs,
  ) {}

  /** Record what a discovery found, all of it at once; see the class comment for the rules. One transaction. */
  reconcile(files: readonly FoundFile[], urls: readonly FoundUrl[], opts: ReconcileOptions): ReconcileReport {
    return this.db
      .transaction(() => {
        const pass = this.begin();
        pass.record(files, urls, opts);
        return pass.end(opts);
      })
      .immediate();
  }

  /** A discovery recorded in batches: its names are current as each batch is recorded. */
  begin(): DiscoveryPass {
    return new DiscoveryPass(this.db, this.items, this.inputs, this.inputs.beginGeneration(), false);
  }

  /**
   * After a complete discovery, the new names a followed folder brings (`run --follow`): they
   * join its generation, each batch decided as it is recorded (the discovery's names are all
   * known: a changed name's old photo is reset only when no other current name has it), and
   * the pass never ends: nothing is marked gone for being absent from it.
   */
  follow(): DiscoveryPass {
    return new DiscoveryPass(this.db, this.items, this.inputs, this.inputs.generation(), true);
  }
}

/** One discovery, recorded a batch at a time (see the file comment). */
export class DiscoveryPass {
  /** Names of new content some of which had other content before: decided at the end, when every name found is known. */
  readonly #waiting: Entry[] = [];
  /** Photos whose label is a name this discovery had not seen again when it recorded another of their names. */
  readonly #labels = new Set<number>();
  readonly #counts = zero();
  /** URL inputs made by this pass: each goes to the next key in turn. */
  #urls = 0;

  constructor(
    private readonly db: Database.Database,
    private readonly items: Items,
    private readonly inputs: Inputs,
    readonly gen: number,
    /** A followed folder's pass (Discovery.follow): every batch final, no end. */
    private readonly following: boolean,
  ) {}

  /** One batch, in one transaction: its names recorded, new content made photos the lanes may take at once. */
  record(files: readonly FoundFile[], urls: readonly FoundUrl[], opts: ReconcileOptions): BatchReport {
    return this.db.transaction(() => this.recordTx(byContent(files, urls), opts, this.following)).immediate();
  }

  /**
   * The discovery saw every name: the names waiting are decided, labels settled, photos whose
   * names are all gone marked so, and the generation completed (its names are the current
   * ones). One transaction. Not called for a discovery that was stopped half way: it marks
   * nothing gone.
   */
  end(opts: ReconcileOptions): ReconcileReport {
    return this.db
      .transaction(() => {
        if (this.#waiting.length > 0) this.recordTx(groupByContent(this.#waiting.splice(0)), opts, true);
        for (const id of this.#labels) this.settleLabel(id);
        const gone = markGone(this.db, this.items, this.gen);
        this.reassignUrlLanes(opts.keyFps);
        const report = this.sofar();
        this.inputs.completeGeneration(this.gen);
        return { ...report, gone };
      })
      .immediate();
  }

  /** The report so far (the run's display counts names found while the discovery goes on). */
  get counts(): Readonly<Counts> {
    return this.#counts;
  }

  /** What the batches recorded, for a discovery stopped half way: nothing was marked gone. */
  sofar(): ReconcileReport {
    const distinct = stmt<[number], { n: number }>(this.db, 'SELECT COUNT(DISTINCT item_id) AS n FROM inputs WHERE seen_gen = ?').get(
      this.gen,
    )!.n;
    return { ...this.#counts, distinct, gone: 0 };
  }

  private recordTx(batch: { unique: Entry[]; groups: Map<string, Entry[]> }, opts: ReconcileOptions, final: boolean): BatchReport {
    const now = clock.now();
    const keys = new Set(batch.unique.map((e) => e.key));
    const b: Batch = { groups: batch.groups, claimed: new Set(), touched: new Map(), c: zero(), final, keyFps: opts.keyFps, keys };
    const { c, touched, claimed } = b;
    const ids: number[] = [];
    for (const [hash, group] of batch.groups) {
      const found = this.photoOf(hash, group, b);
      if (found === undefined) continue;
      const { item, live } = found;
      claimed.add(item.id);
      const earlier = this.touch(b, item.id).earlier;
      for (const e of live) {
        ids.push(this.upsertRow(e, item.id, now));
        touched.get(item.id)!.list.push(e);
      }
      c.duplicates += live.length - (earlier ? 0 : 1);
    }

    // Labels (items.rel_path: what status shows) and source paths follow the current names.
    for (const [itemId, t] of touched) this.followNames(itemId, t.list, final);

    // A photo that was gone and is found again is back where it was (then looked at below).
    for (const itemId of touched.keys()) if (bringBack(this.db, this.items, itemId)) c.back++;

    // A skip reason that no longer holds (say transcode turned on) queues the photo again,
    // and one that now holds (transcode turned off) skips a photo not yet started.
    for (const [itemId, t] of touched) if (this.reconsider(itemId, t.list, t.earlier)) c.requeued++;

    c.names = batch.unique.length;
    for (const k of Object.keys(c) as (keyof Counts)[]) this.#counts[k] += c[k];
    return { ...c, inputIds: ids };
  }

  /**
   * The photo a group of names of one content belongs to: the item of that content, one of
   * a legacy ledger, an old item reset in place, or a new one; undefined when the group waits
   * (for the end of the discovery, or for the next run while its old content's task is in flight).
   */
  private photoOf(hash: string, group: Entry[], b: Batch): { item: ItemRow; live: Entry[] } | undefined {
    const { claimed, c } = b;
    const first = group[0]!;
    const known = this.byHash(hash) ?? (first.kind === 'file' ? this.adoptLegacy(group, hash, claimed) : undefined);
    if (known) return { item: known, live: group };
    // New content. Names that had other content before: reuse their old item when
    // nothing else needs it; leave them alone while its old content is in flight.
    const previous = group.map((e) => ({ e, row: this.row(e.key) })).filter((p) => p.row !== undefined);
    const inFlight = previous.filter((p) => {
      const old = this.items.get(p.row!.item_id);
      return old !== undefined && !RESETTABLE.has(old.state);
    });
    for (const p of inFlight) {
      this.touch(b, p.row!.item_id).list.push(p.e);
      stmt(this.db, 'UPDATE inputs SET seen_gen = ? WHERE id = ?').run(this.gen, p.row!.id);
      c.deferred++;
    }
    const live = group.filter((e) => !inFlight.some((p) => p.e === e));
    if (live.length === 0) return undefined;
    const changedNames = live.filter((e) => previous.some((p) => p.e === e)).length;
    // Whether the old photo may be reset depends on every name found: decided at the end.
    if (changedNames > 0 && !b.final) {
      this.#waiting.push(...live);
      return undefined;
    }
    const reusable = previous
      .filter((p) => !inFlight.includes(p))
      .map((p) => this.items.get(p.row!.item_id)!)
      .find(
        (old) =>
          old.content_hash !== null &&
          !old.content_hash.startsWith('url:') &&
          !b.groups.has(old.content_hash) &&
          !claimed.has(old.id) &&
          !this.seenNow(old.id, b.keys) &&
          RESETTABLE.has(old.state),
      );
    if (changedNames > 0) c.changed += changedNames;
    else c.added++;
    if (reusable) return { item: this.resetItem(reusable, live[0]!, hash), live };
    const item = this.insertItem(live[0]!, b.keyFps, this.#urls);
    if (live[0]!.kind === 'url') this.#urls++;
    return { item, live };
  }

  /** A photo met in this batch: whether names of it were recorded by an earlier batch of this discovery. */
  private touch(b: Batch, itemId: number): { list: Entry[]; earlier: boolean } {
    let t = b.touched.get(itemId);
    if (!t) {
      t = { list: [], earlier: this.seenNow(itemId, b.keys) };
      b.touched.set(itemId, t);
    }
    return t;
  }

  /**
   * Whether this discovery has recorded a name of the photo other than the batch's own (in
   * an earlier batch; for a followed folder's pass, any current name).
   */
  private seenNow(itemId: number, batchKeys: ReadonlySet<string>): boolean {
    return stmt<[number, number], { key: string }>(this.db, 'SELECT key FROM inputs WHERE item_id = ? AND seen_gen = ?')
      .all(itemId, this.gen)
      .some((r) => !batchKeys.has(r.key));
  }

  /**
   * A photo's skip reason, looked at again with its names of this batch: queued again when
   * one is accepted now; skipped when every name is refused — unless an earlier batch of this
   * discovery recorded a name of it, whose verdict stands (names of one content share their
   * reasons, except one a name has alone: a second link to the same file).
   */
  private reconsider(itemId: number, list: readonly Entry[], earlier: boolean): boolean {
    const item = this.items.get(itemId)!;
    const own = list.filter((e) => e.hash === item.content_hash);
    const reason = own.length > 0 && own.every((e) => e.skipReason !== null) ? own[0]!.skipReason : null;
    if (item.state === 'skipped' && reason === null && own.length > 0) {
      this.items.move(item.id, 'skipped', 'queued', { reason: null, due_ms: 0, retries: 0 }, 'input accepted now');
      return true;
    }
    if (item.state === 'queued' && reason !== null && !earlier) this.items.move(item.id, 'queued', 'skipped', { reason }, reason);
    return false;
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

  private upsertRow(e: Entry, itemId: number, now: number): number {
    const existing = this.row(e.key);
    if (!existing) {
      const r = stmt(
        this.db,
        `INSERT INTO inputs (key, kind, name, src, item_id, content_hash, size_bytes, mtime_ms, seen_gen, created_ms)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ).run(e.key, e.kind, e.name, e.src, itemId, e.hash, e.size, e.mtime, this.gen, now);
      return Number(r.lastInsertRowid);
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
    ).run(e.src, itemId, e.hash, e.size, e.mtime, this.gen, moved ? 1 : 0, moved ? 1 : 0, existing.id);
    return existing.id;
  }

  /**
   * Keep an item's label and source among its current names (a rename moves both). While
   * the discovery goes on, a label whose name was found before and not seen again yet may
   * still be: it is settled at the end (settleLabel).
   */
  private followNames(itemId: number, list: readonly Entry[], final: boolean): void {
    const item = this.items.get(itemId)!;
    const own = list.filter((e) => e.hash === item.content_hash);
    if (own.length === 0) return;
    const keep = own.find((e) => e.label === item.rel_path);
    if (!keep) {
      const labelRow = this.row(`f:${item.rel_path}`);
      if (labelRow?.item_id === itemId && labelRow.content_hash === item.content_hash) {
        if (labelRow.seen_gen === this.gen) return;
        if (!final) {
          this.#labels.add(itemId);
          return;
        }
      }
    }
    const target = keep ?? own[0]!;
    this.moveLabel(item, target.label, target.src);
  }

  /** At the end: a label whose name was not seen again moves to the first current name of the photo's content. */
  private settleLabel(itemId: number): void {
    const item = this.items.get(itemId)!;
    const names = stmt<[number, number, string | null], { name: string; src: string; kind: string }>(
      this.db,
      "SELECT name, src, kind FROM inputs WHERE item_id = ? AND seen_gen = ? AND content_hash IS ? ORDER BY kind = 'url', name, id",
    ).all(itemId, this.gen, item.content_hash);
    const label = (n: { name: string; src: string; kind: string }) => (n.kind === 'url' ? n.src : n.name);
    if (names.length === 0 || names.some((n) => label(n) === item.rel_path)) return;
    this.moveLabel(item, label(names[0]!), names[0]!.src);
  }

  private moveLabel(item: ItemRow, label: string, src: string): void {
    if (item.rel_path !== label) this.freeLabel(label, item.id);
    if (item.rel_path !== label || item.src_path !== src) {
      stmt(this.db, 'UPDATE items SET rel_path = ?, src_path = ? WHERE id = ?').run(label, src, item.id);
    }
  }

  /** Make a label free for `forItem` by moving whichever other item holds it to a label of its own. */
  private freeLabel(label: string, forItem: number): void {
    const holder = stmt<[string], ItemRow>(this.db, 'SELECT * FROM items WHERE rel_path = ?').get(label);
    if (!holder || holder.id === forItem) return;
    const names = stmt<[number, number], { name: string; src: string; kind: string }>(
      this.db,
      'SELECT name, src, kind FROM inputs WHERE item_id = ? AND seen_gen >= ? ORDER BY id',
    ).all(holder.id, this.inputs.generation());
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
  return groupByContent(entries.filter((e) => (seenKeys.has(e.key) ? false : (seenKeys.add(e.key), true))));
}

/** Names grouped by content, in a stable order (files by path, then URL lines as listed). */
function groupByContent(unique: Entry[]): { unique: Entry[]; groups: Map<string, Entry[]> } {
  const groups = new Map<string, Entry[]>();
  for (const e of unique) {
    const g = groups.get(e.hash);
    if (g) g.push(e);
    else groups.set(e.hash, [e]);
  }
  return { unique, groups };
}
