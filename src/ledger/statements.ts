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

const runners = new WeakMap<Database.Database, (fn: () => unknown) => unknown>();

/**
 * Run `fn` in a transaction (a savepoint when one is already open), as
 * `db.transaction(fn)()` does, without building a new wrapper each time: better-sqlite3's
 * `transaction()` makes four wrapper functions per call, about 12 µs, which at ~100,000
 * state changes a night was a tenth of a simulation's ledger time.
 */
export function inTransaction<T>(db: Database.Database, fn: () => T): T {
  let run = runners.get(db);
  if (!run) {
    run = db.transaction((f: () => unknown) => f());
    runners.set(db, run);
  }
  return run(fn) as T;
}
