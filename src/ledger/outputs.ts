import type Database from 'better-sqlite3';
import type { Items } from './items.js';
import type { ItemRow } from './rows.js';
import { inTransaction, stmt } from './statements.js';
import { readSpaceFacts, type SpaceFacts } from './space.js';
import { countNotDownloaded, PARKED_MS } from './undownloaded.js';

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

  /** Photos paid for whose result is not on disk yet (undownloaded.ts). */
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
    return stmt(this.db, "SELECT 1 FROM items WHERE output_path = ? AND state = 'done'").get(outputPath) !== undefined;
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
