import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { migrate, schemaVersion } from './migrate.js';

export class LedgerMissingError extends Error {
  override readonly name = 'LedgerMissingError';
  readonly code = 'DARKROOM_NO_LEDGER';
  constructor(readonly file: string) {
    super(`no ledger at ${file}; start a job with \`darkroom run <jobs.yaml>\` first`);
  }
}

export interface OpenOptions {
  /** Open an existing ledger for reading only (status, report): never creates or migrates. */
  readonly readonly?: boolean;
}

/**
 * Open (creating if needed) a ledger database. `:memory:` is allowed for simulations.
 *
 * WAL lets `status` read while `run` writes (L6). synchronous=FULL because
 * better-sqlite3's build defaults WAL to NORMAL, under which a committed row (say an
 * `accepted` submission) can vanish on power loss — exactly the row L1 relies on.
 */
export function openDatabase(file: string, opts: OpenOptions = {}): Database.Database {
  const memory = file === ':memory:';
  if (!memory) {
    if (opts.readonly && !existsSync(file)) throw new LedgerMissingError(file);
    if (!opts.readonly) createPrivate(file);
  }
  const db = new Database(file, { readonly: opts.readonly ?? false, fileMustExist: opts.readonly ?? false });
  db.pragma('busy_timeout = 5000');
  if (!opts.readonly) {
    if (!memory) db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    db.pragma('foreign_keys = ON');
    migrate(db, file);
  } else if (schemaVersion(db) === 0) {
    db.close();
    throw new LedgerMissingError(file);
  }
  return db;
}

/** The ledger holds request ids and photo names: readable by its owner only. */
function createPrivate(file: string): void {
  mkdirSync(path.dirname(file), { recursive: true });
  if (!existsSync(file)) closeSync(openSync(file, 'a', 0o600));
  chmodSync(file, 0o600);
  for (const side of ['-wal', '-shm']) {
    if (!existsSync(file + side)) closeSync(openSync(file + side, 'a', 0o600));
    chmodSync(file + side, 0o600);
  }
}
