import { readdirSync, readFileSync } from 'node:fs';
import type Database from 'better-sqlite3';
import { clock } from '../clock.js';
import { LedgerTooNewError } from '../errors.js';

/** migrations/ sits two levels above both src/ledger/ (tests) and dist/ledger/ (built). */
export const MIGRATIONS_DIR = new URL('../../migrations/', import.meta.url);
/** The per-key store's own migrations (src/ledger/keystore.ts), numbered from 001 apart from the ledger's. */
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
