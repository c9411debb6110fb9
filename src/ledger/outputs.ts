import type Database from 'better-sqlite3';
import type { Items } from './items.js';
import type { ItemRow } from './rows.js';
import { inTransaction, stmt } from './statements.js';

/** The download stage's writes (L4: an item is `done` only after its file is in place). */
export class Outputs {
  constructor(
    private readonly db: Database.Database,
    private readonly items: Items,
  ) {}

  /** The next finished item waiting for its result to be downloaded (a parked one never is: PARKED_MS is not `<= now`). */
  nextToDownload(now: number, exclude: ReadonlySet<number>): ItemRow | undefined {
    const first = this.items.firstDue("state = 'succeeded' AND due_ms <= ?", [now], exclude);
    return first === undefined ? undefined : this.items.get(first.id);
  }

  /** When the next download that this run will still try is due (parked ones aside). */
  earliestDue(): number | undefined {
    const r = stmt<[number], { d: number | null }>(
      this.db,
      "SELECT MIN(due_ms) AS d FROM items WHERE state = 'succeeded' AND due_ms < ?",
    ).get(PARKED_MS);
    return r?.d ?? undefined;
  }

  /** Results this run will still try to download (waiting or backing off; parked ones aside). */
  waiting(): number {
    return stmt<[number], { n: number }>(this.db, "SELECT COUNT(*) AS n FROM items WHERE state = 'succeeded' AND due_ms < ?").get(
      PARKED_MS,
    )!.n;
  }

  /** Photos paid for whose result is not on disk yet (countNotDownloaded, below). */
  notDownloaded(): number {
    return countNotDownloaded(this.db);
  }

  /** For the disk check before a run: the outputs still to write, and what results weighed so far. */
  spaceFacts(): SpaceFacts {
    return readSpaceFacts(this.db);
  }

  /**
   * At the start of a run: every paid result not yet downloaded is due at once, parked ones
   * and those backing off from an earlier run alike (downloads cost no API call, and the
   * operator may have moved the file in the way or freed space since).
   */
  dueAllNow(): number {
    return stmt(this.db, "UPDATE items SET due_ms = 0 WHERE state = 'succeeded' AND due_ms > 0").run().changes;
  }

  start(item: ItemRow): ItemRow {
    return this.items.move(item.id, 'succeeded', 'downloading');
  }

  done(item: ItemRow, outputPath: string): ItemRow {
    return this.items.move(item.id, 'downloading', 'done', { output_path: outputPath, reason: null }, outputPath);
  }

  /** A failed download or write is repeated later (the result URL is free to fetch); a paid result is never given up. */
  retryLater(item: ItemRow, reason: string, dueMs: number): ItemRow {
    return this.items.move(item.id, 'downloading', 'succeeded', { due_ms: dueMs, retries: item.retries + 1, reason }, reason);
  }

  /** An interrupt aborted the download: back to wait, due at once, no retry spent. */
  interrupted(item: ItemRow): ItemRow {
    return this.items.move(item.id, 'downloading', 'succeeded', { due_ms: 0 }, 'download interrupted');
  }

  /**
   * This run cannot write the result (a file of the operator's at the output path, a name
   * the file system refuses): the photo stays paid-for, with the reason saying what to do,
   * and is not tried again until the next run (dueAllNow), so it is not retried in a loop.
   */
  park(item: ItemRow, reason: string): ItemRow {
    return this.items.move(item.id, 'downloading', 'succeeded', { due_ms: PARKED_MS, retries: item.retries + 1, reason }, reason);
  }

  /**
   * Write the output path down before the file is renamed there (L4): a run killed between
   * the rename and `done` then finds the file claimed by this item, so its own file is not
   * mistaken for a stranger's on the next run. One guarded statement: of two items racing
   * for one path only one wins; the loser gets the winner back.
   */
  claim(item: ItemRow, outputPath: string): { id: number; rel_path: string } | undefined {
    const r = stmt(
      this.db,
      `UPDATE items SET output_path = @path WHERE id = @id AND state = 'downloading'
         AND NOT EXISTS (SELECT 1 FROM items WHERE output_path = @path AND id != @id)`,
    ).run({ id: item.id, path: outputPath });
    if (r.changes === 1) return undefined;
    const owner = this.ownerOf(outputPath);
    if (owner === undefined || owner.id === item.id) throw new Error(`item ${item.id} could not claim ${outputPath}: not downloading`);
    return owner;
  }

  /**
   * The item whose output is (or is about to be) at this path, if any: a file there that no
   * item claims was not written by this ledger and is never overwritten.
   */
  ownerOf(outputPath: string): { id: number; rel_path: string } | undefined {
    return stmt<[string], { id: number; rel_path: string }>(
      this.db,
      'SELECT id, rel_path FROM items WHERE output_path = ? ORDER BY id LIMIT 1',
    ).get(outputPath);
  }

  /** Output paths the ledger itself wrote, so a rerun can tell its own files from a stranger's. */
  isOwnOutput(outputPath: string): boolean {
    // `+state`: by the output path's index, not every done photo by state.
    return stmt(this.db, "SELECT 1 FROM items WHERE output_path = ? AND +state = 'done'").get(outputPath) !== undefined;
  }

  /** Result URLs of the item's current task that expired before they were downloaded. */
  urlRefreshes(item: ItemRow): number {
    const r = stmt<[number, string | null], { n: number }>(
      this.db,
      'SELECT url_refreshes AS n FROM attempts WHERE item_id = ? AND task_id = ? ORDER BY id DESC LIMIT 1',
    ).get(item.id, item.task_id);
    return r?.n ?? 0;
  }

  /**
   * The result URL expired (403/404/410 from the result host): the task goes back to be
   * polled once, at once, for a fresh URL; if the task itself is gone, the poll's 404 has
   * it created again. Counted on the attempt, so the refreshes of one task are bounded.
   */
  refreshUrl(item: ItemRow, reason: string, dueMs: number): ItemRow {
    return inTransaction(this.db, () => {
      stmt(
        this.db,
        'UPDATE attempts SET url_refreshes = url_refreshes + 1 WHERE id = (SELECT id FROM attempts WHERE item_id = ? AND task_id = ? ORDER BY id DESC LIMIT 1)',
      ).run(item.id, item.task_id);
      return this.items.move(item.id, 'downloading', 'active', { result_url: null, due_ms: dueMs, reason: null, retries: 0 }, reason);
    });
  }
}

/**
 * Photos paid for whose result is not on disk yet: the last task succeeded (the service
 * charged for it and holds the result), the output is not written. They are pending, not
 * failed: every `darkroom run` downloads them first. One the run could not write stays
 * `succeeded` with a reason (its due time PARKED_MS until the next run starts).
 *
 * Also counted: an item polled again for a fresh result URL (its last URL expired), back in
 * `active` with its task's attempt still SUCCESS.
 */
export interface NotDownloaded {
  readonly id: number;
  readonly path: string;
  /** Why the last try failed (what to do, for a parked one), or null before any try. */
  readonly reason: string | null;
}

/** due_ms of a photo parked until the next run (the largest time a JS Date holds): no retry in this run. */
export const PARKED_MS = 8_640_000_000_000_000;

const WHERE = `(i.state IN ('succeeded', 'downloading')
   OR (i.state = 'active' AND EXISTS (SELECT 1 FROM attempts a WHERE a.item_id = i.id AND a.task_id = i.task_id AND a.status = 'SUCCESS')))`;

export function countNotDownloaded(db: Database.Database): number {
  return stmt<[], { n: number }>(db, `SELECT COUNT(*) AS n FROM items i WHERE ${WHERE}`).get()!.n;
}

/** The first `limit` of them, by id, with their reasons. */
export function listNotDownloaded(db: Database.Database, limit = 200): NotDownloaded[] {
  return stmt<[number], NotDownloaded>(
    db,
    `SELECT i.id, i.rel_path AS path, i.reason FROM items i WHERE ${WHERE} ORDER BY i.id LIMIT ?`,
  ).all(limit);
}

/** What the disk check before a run needs to know from the ledger (src/outputs/diskcheck.ts). */
export interface SpaceFacts {
  /** Photos whose output is still to be written: not done, held, failed or skipped. */
  readonly photos: number;
  /** Their input bytes, where known (a URL input's size is not). */
  readonly inputBytes: number;
  /** Of `photos`, those whose input size is not known. */
  readonly unknownSize: number;
  /** Further names of those photos (duplicates): each gets a copy of the output. */
  readonly extraNames: number;
  /** Photos done whose output and input sizes are both known: what the service's results weighed against their inputs. */
  readonly observed: { readonly photos: number; readonly outputBytes: number; readonly inputBytes: number };
}

const PENDING = "state NOT IN ('done', 'held', 'failed', 'skipped')";

function readSpaceFacts(db: Database.Database): SpaceFacts {
  const p = stmt<[], { photos: number; bytes: number | null; unknown: number | null }>(
    db,
    `SELECT COUNT(*) AS photos, SUM(size_bytes) AS bytes, SUM(size_bytes IS NULL) AS unknown FROM items WHERE ${PENDING}`,
  ).get()!;
  const gen = Number(stmt<[], { value: string }>(db, "SELECT value FROM meta WHERE key = 'inputs.generation'").get()?.value ?? 0);
  const names = stmt<[number], { n: number }>(
    db,
    `SELECT COUNT(*) AS n FROM inputs n JOIN items i ON i.id = n.item_id WHERE n.seen_gen >= ? AND i.${PENDING}`,
  ).get(gen)!.n;
  const o = stmt<[], { photos: number; out: number | null; inb: number | null }>(
    db,
    `SELECT COUNT(*) AS photos, SUM(f.bytes) AS out, SUM(i.size_bytes) AS inb
     FROM items i JOIN output_files f ON f.path = i.output_path
     WHERE i.state = 'done' AND i.size_bytes > 0 AND f.bytes > 0`,
  ).get()!;
  return {
    photos: p.photos,
    inputBytes: p.bytes ?? 0,
    unknownSize: p.unknown ?? 0,
    extraNames: Math.max(0, names - p.photos),
    observed: { photos: o.photos, outputBytes: o.out ?? 0, inputBytes: o.inb ?? 0 },
  };
}
