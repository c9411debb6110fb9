import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';

/**
 * A SQLite file darkroom writes (the ledger, a key's store), opened the one durable way:
 * private to its owner, WAL so readers work beside the writer (§ L6), synchronous=FULL
 * because better-sqlite3's build defaults WAL to NORMAL, under which a committed row (say an
 * `accepted` submission) can vanish on power loss — exactly the row § L1 relies on — and a
 * 5 s busy timeout against write transactions that each take a few milliseconds.
 *
 * `dirMode`: the folder's mode when darkroom makes it (the key store's state folder is the
 * user's alone; a ledger's folder is wherever the job put it). `:memory:` for simulations.
 */
export function openWritable(file: string, dirMode?: number): Database.Database {
  const memory = file === ':memory:';
  if (!memory) createPrivate(file, dirMode);
  const db = new Database(file);
  try {
    db.pragma('busy_timeout = 5000');
    if (!memory) db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    return db;
  } catch (err) {
    db.close();
    throw err;
  }
}

/** The file holds request ids and photo names: readable by its owner only, its WAL files too. */
function createPrivate(file: string, dirMode: number | undefined): void {
  mkdirSync(path.dirname(file), { recursive: true, ...(dirMode === undefined ? {} : { mode: dirMode }) });
  for (const f of [file, `${file}-wal`, `${file}-shm`]) {
    if (!existsSync(f)) closeSync(openSync(f, 'a', 0o600));
    chmodSync(f, 0o600);
  }
}
