import { existsSync, statSync, readFileSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { migrate, schemaVersion, openWritable, type WritableFile, type WritableOptions } from './sqliteFile.js';
import { LedgerMissingError, LedgerUnwritableError, type SqliteFileRole, LedgerLinkedError, type LockHolder } from '../errors.js';
import { holderFromRow, judgeHolder, ledgerBusy, SELECT_HOLDER, type LockRow, systemProbe, type ProcessProbe } from './lock.js';

export interface OpenOptions extends WritableOptions {
  /** Open an existing ledger for reading only (status, report): never creates or migrates. */
  readonly readonly?: boolean;
  /** Told the SQL of every statement run on a ledger opened read-only (better-sqlite3's `verbose`). */
  readonly trace?: (sql: string) => void;
}

/**
 * Open (creating if needed) a ledger database. `:memory:` is allowed for simulations.
 * Written ledgers open durably (sqliteFile.ts: WAL so `status` reads while `run` writes,
 * synchronous=FULL for the rows § L1 relies on), with foreign keys on.
 */
export function openDatabase(file: string, opts: OpenOptions = {}): Database.Database {
  return openLedgerFile(file, opts).db;
}

/** openDatabase, and the network file system the ledger is on when the job allows one (sqliteFile.ts). */
export function openLedgerFile(file: string, opts: OpenOptions = {}): WritableFile {
  const memory = file === ':memory:';
  if (opts.readonly) {
    if (!memory && !existsSync(file)) throw new LedgerMissingError(file);
    const db = new Database(file, {
      readonly: true,
      fileMustExist: true,
      ...(opts.trace ? { verbose: (sql) => opts.trace!(String(sql)) } : {}),
    });
    db.pragma('busy_timeout = 5000');
    if (schemaVersion(db) === 0) {
      db.close();
      throw new LedgerMissingError(file);
    }
    return { db, networkFs: null };
  }
  if (!memory) {
    // A folder has a name per entry in it: said as what it is, not as hard links (refuseSecondName, below).
    if (isFolder(file))
      throw new LedgerUnwritableError(file, `it is a folder, not a file (name a file in it, such as ${path.join(file, 'darkroom.db')})`);
    // Before anything is written under this name (see refuseSecondName, below).
    refuseSecondName(file);
  }
  let db: Database.Database | undefined;
  try {
    const opened = openWritable(file, LEDGER_FILE, opts);
    db = opened.db;
    db.pragma('foreign_keys = ON');
    migrate(db, file);
    return opened;
  } catch (err) {
    db?.close();
    const reason = unwritableReason(err);
    if (reason !== undefined) throw new LedgerUnwritableError(file, reason);
    throw err;
  }
}

const LEDGER_FILE: SqliteFileRole = {
  name: 'ledger',
  fix: 'point --ledger (or ledger: in the jobs file) at a new file or an existing ledger',
  localFix: 'set ledger: to a local path — inputs and outputs may stay on the NAS',
};

function isFolder(file: string): boolean {
  try {
    return statSync(file).isDirectory();
  } catch {
    return false; // not there yet, or the open says why
  }
}

const ERRNO_REASONS: Record<string, string> = {
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EROFS: 'read-only file system',
  ENOSPC: 'no space left on the device',
  EDQUOT: 'disk quota exceeded',
  ENOENT: 'no such file or folder, and it cannot be made there',
  ENOTDIR: 'a part of the path is a file, not a folder',
  EEXIST: 'a file is where its folder should be',
  EISDIR: 'that path is a folder',
};

/** Why the ledger cannot be written, when `err` says so; undefined for anything else. */
function unwritableReason(err: unknown): string | undefined {
  const e = err as { code?: unknown; path?: unknown };
  if (typeof e?.code !== 'string') return undefined;
  const at = typeof e.path === 'string' ? ` at ${e.path}` : '';
  const errno = ERRNO_REASONS[e.code];
  if (errno) return `${errno} (${e.code}${at})`;
  if (e.code.startsWith('SQLITE_READONLY')) return `the file or its folder is read-only (${e.code})`;
  if (e.code.startsWith('SQLITE_CANTOPEN')) return `it or its -wal/-shm files cannot be opened for writing (${e.code})`;
  if (e.code === 'SQLITE_FULL') return `the disk is full (${e.code})`;
  if (e.code.startsWith('SQLITE_IOERR')) return `the disk reported an error (${e.code})`;
  return undefined;
}

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
function refuseSecondName(file: string, probe: ProcessProbe = systemProbe): void {
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
