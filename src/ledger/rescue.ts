import { closeSync, existsSync, openSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import type Database from 'better-sqlite3';
import { openHere } from './fileCheck.js';
import type { LedgerChange } from '../errors.js';
import { makeDirs } from '../fsdirs.js';

/** Where a lost ledger was saved (and whether its path is free to put it back), or why it could not be. */
export type Rescue = { readonly savedTo: string; readonly pathFree: boolean } | { readonly error: string };

/**
 * A ledger deleted during a run (or deleted as another file took its name) lives on only
 * in this process's open file: when the process ends, it is gone, and with it the record of
 * every task paid for and every create whose outcome is unknown; the next run would create
 * those photos again. So, once the run has stopped and the calls in flight are recorded,
 * a consistent copy is written beside the path (VACUUM INTO reads through this connection,
 * journal included) under a name of its own, `<ledger>.rescued`.
 *
 * The deleted file's journal (`<ledger>-wal`, `-shm`) stays at the path: SQLite does not
 * remove the journal of a database file that was unlinked under it, and a journal found
 * beside a database is replayed into it: put back at the path, the copy would be
 * overwritten with the deleted file's pages. Those names are removed here, but only while
 * they are the files this process has open (the journal of the deleted ledger, not that
 * of another ledger since made at the path).
 */
export function rescueDeleted(db: Database.Database, file: string, change: LedgerChange | null): Rescue | null {
  const deleted = change?.kind === 'deleted' || (change?.kind === 'replaced' && change.original.kind === 'deleted');
  if (!deleted) return null;
  let to = `${file}.rescued`;
  for (let n = 2; existsSync(to); n++) to = `${file}.rescued-${n}`;
  try {
    makeDirs(path.dirname(to));
    // Readable by its owner only, like the ledger; VACUUM INTO fills an empty file.
    closeSync(openSync(to, 'wx', 0o600));
    db.prepare('VACUUM INTO ?').run(to);
  } catch (err) {
    const e = err as { code?: string; message?: string };
    return { error: `${e.message ?? String(err)}${e.code && !e.message?.includes(e.code) ? ` (${e.code})` : ''}` };
  }
  for (const side of [`${file}-wal`, `${file}-shm`]) {
    try {
      if (openHere(side)) unlinkSync(side);
    } catch {
      // gone meanwhile
    }
  }
  return { savedTo: to, pathFree: change.kind === 'deleted' && !existsSync(file) };
}
