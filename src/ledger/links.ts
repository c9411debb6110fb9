import { readFileSync, statSync } from 'node:fs';
import Database from 'better-sqlite3';
import { holderFromRow, judgeHolder, ledgerBusy, SELECT_HOLDER, type LockRow } from './lock.js';
import { systemProbe, type ProcessProbe } from './processIdentity.js';
import { LedgerLinkedError, type LockHolder } from '../errors.js';

/**
 * Before a ledger is opened for writing: refuse a file with more than one name.
 *
 * SQLite finds a database's write-ahead log and shared-memory index by the name it was
 * opened under (`<name>-wal`, `<name>-shm`; symbolic links are resolved, hard links cannot
 * be). A second process opening the ledger through a hard link reads the main file alone:
 * measured here, it did not even see the tables a live run had created, so it would have
 * migrated a "new" ledger into a journal of its own, and taken a lock nobody else sees.
 *
 * When a run holds the ledger under its other name, the operator reads the usual busy line
 * (the lock row is checkpointed into the main file when taken, see RunLock.acquire, so it
 * can be read here without SQLite's journal); otherwise the line says what the links do.
 */
export function refuseSecondName(file: string, probe: ProcessProbe = systemProbe): void {
  let names: number;
  try {
    names = statSync(file).nlink;
  } catch {
    return; // not there yet: the open creates it, with one name
  }
  if (names <= 1) return;
  const holder = peekHolder(file);
  if (holder) {
    const verdict = judgeHolder(holder, probe.self(), probe);
    if (verdict !== 'gone') throw ledgerBusy(file, holder, verdict);
  }
  throw new LedgerLinkedError(file, names);
}

/** Above this the lock row is not looked for (the file is read whole); the link line is said alone. */
const PEEK_LIMIT_BYTES = 256 * 1024 * 1024;

/**
 * The lock row as the main file has it, read from a copy in memory: nothing is opened by
 * the file's name (no -wal or -shm made, no lock taken). The copy's header is set to the
 * rollback journal (bytes 18 and 19: 2 = WAL), which an in-memory database needs.
 */
function peekHolder(file: string): LockHolder | undefined {
  try {
    if (statSync(file).size > PEEK_LIMIT_BYTES) return undefined;
    const bytes = readFileSync(file);
    if (bytes.length < 100) return undefined;
    bytes[18] = 1;
    bytes[19] = 1;
    const db = new Database(bytes, { readonly: true });
    try {
      const row = db.prepare(SELECT_HOLDER).get() as LockRow | undefined;
      return row ? holderFromRow(row) : undefined;
    } finally {
      db.close();
    }
  } catch {
    return undefined; // no lock table yet, or a page caught mid-write: the link line is said alone
  }
}
