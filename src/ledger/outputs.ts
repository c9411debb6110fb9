import type Database from 'better-sqlite3';
import type { Items } from './items.js';
import type { ItemRow } from './rows.js';
import { stmt } from './statements.js';

/** The download stage's writes (L4: an item is `done` only after its file is in place). */
export class Outputs {
  constructor(
    private readonly db: Database.Database,
    private readonly items: Items,
  ) {}

  /** The next finished item waiting for its result to be downloaded. */
  nextToDownload(now: number, exclude: ReadonlySet<number>): ItemRow | undefined {
    const rows = stmt<[number, number], ItemRow>(
      this.db,
      "SELECT * FROM items WHERE state = 'succeeded' AND due_ms <= ? ORDER BY due_ms, id LIMIT ?",
    ).all(now, exclude.size + 1);
    return rows.find((r) => !exclude.has(r.id));
  }

  earliestDue(): number | undefined {
    const r = stmt<[], { d: number | null }>(this.db, "SELECT MIN(due_ms) AS d FROM items WHERE state = 'succeeded'").get();
    return r?.d ?? undefined;
  }

  start(item: ItemRow): ItemRow {
    return this.items.move(item.id, 'succeeded', 'downloading');
  }

  done(item: ItemRow, outputPath: string): ItemRow {
    return this.items.move(item.id, 'downloading', 'done', { output_path: outputPath, reason: null }, outputPath);
  }

  /** A failed download is repeated later (the result URL is free to fetch) until retries run out. */
  retryLater(item: ItemRow, reason: string, dueMs: number): ItemRow {
    return this.items.move(item.id, 'downloading', 'succeeded', { due_ms: dueMs, retries: item.retries + 1, reason }, reason);
  }

  failed(item: ItemRow, reason: string): ItemRow {
    return this.items.move(item.id, 'downloading', 'failed', { reason }, reason);
  }

  /** Output paths the ledger itself wrote, so a rerun can tell its own files from a stranger's. */
  isOwnOutput(outputPath: string): boolean {
    return stmt(this.db, "SELECT 1 FROM items WHERE output_path = ? AND state = 'done'").get(outputPath) !== undefined;
  }
}
