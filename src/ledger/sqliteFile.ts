import { chmodSync, closeSync, existsSync, openSync, readSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { NetworkFsError, NotSqliteFileError, type SqliteFileRole, LedgerTooNewError } from '../errors.js';
import { makeDirs } from '../fsdirs.js';
import { fileSystemOf, type FsProbe } from './fsType.js';
import { clock } from '../clock.js';

export interface WritableOptions {
  /**
   * `ledger.allowNetworkFs: true`: the operator knows the file is on a network file system
   * and wants it there anyway. It is opened with the rollback journal instead of WAL (whose
   * shared memory one host alone keeps coherent); locking is still the network's.
   */
  readonly allowNetworkFs?: boolean | undefined;
  /** How the file system is found (tests give their own). */
  readonly fsProbe?: FsProbe | undefined;
}

/** A SQLite file opened for writing, and the network file system it is on when the operator allowed one. */
export interface WritableFile {
  readonly db: Database.Database;
  /** The network file system's name (nfs, smb …), when the file is on one (allowNetworkFs); else null. */
  readonly networkFs: string | null;
}

/**
 * A SQLite file darkroom writes (the ledger, a key's store), opened the one durable way:
 * private to its owner, WAL so readers work beside the writer (§ L6), synchronous=FULL
 * because better-sqlite3's build defaults WAL to NORMAL, under which a committed row (say an
 * `accepted` submission) can vanish on power loss — exactly the row § L1 relies on — and a
 * 5 s busy timeout against write transactions that each take a few milliseconds.
 *
 * A ledger's folder is wherever the job put it. On a network file system it is refused
 * (NetworkFsError, before anything is written), unless the operator allows it: then with
 * the rollback journal (fsType.ts says why). `:memory:` for simulations.
 */
export function openWritable(file: string, role: SqliteFileRole, opts: WritableOptions = {}): WritableFile {
  const memory = file === ':memory:';
  let networkFs: string | null = null;
  if (!memory) {
    const fs = fileSystemOf(file, opts.fsProbe);
    if (fs.network && !opts.allowNetworkFs) throw new NetworkFsError(file, fs.name, role);
    if (fs.network) networkFs = fs.name;
    if (!sqliteOrNew(file)) throw new NotSqliteFileError(file, role);
    createPrivate(file, role.dirMode, networkFs === null);
  }
  const db = new Database(file);
  try {
    db.pragma('busy_timeout = 5000');
    if (!memory) toJournalMode(db, networkFs === null ? 'WAL' : 'DELETE');
    db.pragma('synchronous = FULL');
    return { db, networkFs };
  } catch (err) {
    db.close();
    throw err;
  }
}

/**
 * The journal mode, waiting out another process that is switching the same file. SQLite
 * answers that pragma SQLITE_BUSY at once, without the busy handler: three runs started
 * together on a ledger not yet made failed one in about 30 opens (test/ledger/migrate.race).
 * So it is tried again every 25 ms, for as long as the busy timeout would have waited.
 */
function toJournalMode(db: Database.Database, mode: 'WAL' | 'DELETE'): void {
  for (let attempt = 1; ; attempt++) {
    try {
      db.pragma(`journal_mode = ${mode}`);
      return;
    } catch (err) {
      // SQLITE_BUSY_RECOVERY too: another opener is recovering the WAL a killed run left.
      if (!((err as { code?: string }).code?.startsWith('SQLITE_BUSY') ?? false) || attempt >= WAL_ATTEMPTS) throw err;
      Atomics.wait(PAUSE, 0, 0, WAL_PAUSE_MS);
    }
  }
}
const WAL_PAUSE_MS = 25;
const WAL_ATTEMPTS = 5000 / WAL_PAUSE_MS;
const PAUSE = new Int32Array(new SharedArrayBuffer(4));

const SQLITE_HEADER = Buffer.from('SQLite format 3\0', 'latin1');

/**
 * Whether the file is missing, empty, or starts as a SQLite database does. A file that
 * cannot be read here says yes: the open that follows reports why in its own words.
 */
function sqliteOrNew(file: string): boolean {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch {
    return true;
  }
  try {
    const head = Buffer.alloc(SQLITE_HEADER.length);
    const n = readSync(fd, head, 0, head.length, 0);
    return n === 0 || head.equals(SQLITE_HEADER);
  } catch {
    return true;
  } finally {
    closeSync(fd);
  }
}

/**
 * The file holds request ids and photo names: readable by its owner only, its WAL files too
 * (a rollback journal is made by SQLite with the file's own mode).
 */
function createPrivate(file: string, dirMode: number | undefined, wal: boolean): void {
  makeDirs(path.dirname(file), dirMode);
  for (const f of wal ? [file, `${file}-wal`, `${file}-shm`] : [file]) {
    if (!existsSync(f)) closeSync(openSync(f, 'a', 0o600));
    try {
      chmodSync(f, 0o600);
    } catch (err) {
      // The last connection of another process, closing, removed its WAL files since the
      // look above: SQLite makes them again with the database file's mode.
      if (f === file || (err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
}

/** migrations/ sits two levels above both src/ledger/ (tests) and dist/ledger/ (built). */
export const MIGRATIONS_DIR = new URL('../../migrations/', import.meta.url);
/** The per-key store's own migrations (src/keystore/store.ts), numbered from 001 apart from the ledger's. */
export const KEYSTORE_MIGRATIONS_DIR = new URL('../../migrations/keystore/', import.meta.url);

export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

export function readMigrations(dir: URL = MIGRATIONS_DIR): Migration[] {
  const files = readdirSync(dir).filter((f) => /^\d{3}_[a-z0-9_]+\.sql$/.test(f));
  const list = files
    .map((f) => ({ version: Number(f.slice(0, 3)), name: f.replace(/\.sql$/, ''), sql: readFileSync(new URL(f, dir), 'utf8') }))
    .sort((a, b) => a.version - b.version);
  list.forEach((m, i) => {
    if (m.version !== i + 1) throw new Error(`migrations must be numbered 001, 002, … without gaps; found ${m.name}`);
  });
  return list;
}

/** Apply, each in its own transaction, the migrations this ledger has not recorded. */
export function migrate(db: Database.Database, file: string, migrations: Migration[] = readMigrations(), what?: string): number[] {
  db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER PRIMARY KEY,
    name       TEXT    NOT NULL,
    applied_ms INTEGER NOT NULL
  )`);
  const version = () => (db.prepare('SELECT MAX(version) AS v FROM schema_migrations').get() as { v: number | null }).v ?? 0;
  const have = version();
  const know = migrations.at(-1)?.version ?? 0;
  if (have > know) throw new LedgerTooNewError(file, have, know, what);
  const applied: number[] = [];
  for (const m of migrations) {
    if (m.version <= have) continue;
    // Two processes opening a new ledger at once both read `have` above. The version is read
    // again inside a write transaction (IMMEDIATE: one writer at a time), so a migration the
    // other applied meanwhile is skipped rather than applied twice.
    const done = db
      .transaction(() => {
        if (version() >= m.version) return false;
        db.exec(m.sql);
        db.prepare('INSERT INTO schema_migrations (version, name, applied_ms) VALUES (?, ?, ?)').run(m.version, m.name, clock.now());
        return true;
      })
      .immediate();
    if (done) applied.push(m.version);
  }
  return applied;
}

export function schemaVersion(db: Database.Database): number {
  const exists = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").get();
  if (!exists) return 0;
  return (db.prepare('SELECT MAX(version) AS v FROM schema_migrations').get() as { v: number | null }).v ?? 0;
}
