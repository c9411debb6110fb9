import type Database from 'better-sqlite3';

const caches = new WeakMap<Database.Database, Map<string, Database.Statement>>();

/** Prepare once per database and SQL text: the scheduler asks the same questions thousands of times. */
export function stmt<P extends unknown[] = unknown[], R = unknown>(db: Database.Database, sql: string): Database.Statement<P, R> {
  let cache = caches.get(db);
  if (!cache) {
    cache = new Map();
    caches.set(db, cache);
  }
  let s = cache.get(sql);
  if (!s) {
    s = db.prepare(sql);
    cache.set(sql, s);
  }
  return s as unknown as Database.Statement<P, R>;
}

/** Whether the ledger has a table: a ledger opened read-only is not migrated, and may predate it. */
export function hasTable(db: Database.Database, name: string): boolean {
  return stmt(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(name) !== undefined;
}

/** Whether a table has a column: a ledger opened read-only is not migrated, and may predate it. */
export function hasColumn(db: Database.Database, table: string, column: string): boolean {
  return stmt<[], { name: string }>(db, `PRAGMA table_info(${table})`)
    .all()
    .some((c) => c.name === column);
}

const runners = new WeakMap<Database.Database, Database.Transaction<(fn: () => unknown) => unknown>>();

/**
 * Run `fn` in a write transaction (a savepoint when one is already open), as
 * `db.transaction(fn).immediate()` does, without building a new wrapper each time:
 * better-sqlite3's `transaction()` makes four wrapper functions per call, about 12 µs,
 * which at ~100,000 state changes a night was a tenth of a simulation's ledger time.
 *
 * IMMEDIATE, never the default DEFERRED, for every transaction that writes: a deferred one
 * reads first, and when it then goes to write while another connection holds the write
 * lock for a moment (a second `darkroom run` reading the run lock before it is refused, a
 * `darkroom usage` logging its call), SQLite answers SQLITE_BUSY at once instead of waiting
 * (busy_timeout is not applied to a read transaction's upgrade) and the run stopped on
 * "database is locked". BEGIN IMMEDIATE takes the write lock first, waiting its turn.
 */
export function inTransaction<T>(db: Database.Database, fn: () => T): T {
  let run = runners.get(db);
  if (!run) {
    run = db.transaction((f: () => unknown) => f());
    runners.set(db, run);
  }
  return run.immediate(fn) as T;
}
