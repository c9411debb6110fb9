import { mkdirSync, rmSync, statSync, writeFileSync, copyFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { Ledger } from '../../src/ledger/index.js';
import { MIGRATIONS_DIR, migrate, readMigrations, schemaVersion } from '../../src/ledger/sqliteFile.js';
import { makeTempDir } from '../helpers/job.js';
import { LedgerMissingError, LedgerTooNewError } from '../../src/errors.js';

const dirs: string[] = [];
afterEach(() => {
  while (dirs.length) rmSync(dirs.pop()!, { recursive: true, force: true });
});
function tmp(): string {
  const d = makeTempDir('darkroom-ledger-');
  dirs.push(d);
  return d;
}

describe('migrations', () => {
  it('are numbered without gaps and applied in order, each recorded once', () => {
    const list = readMigrations();
    expect(list.map((m) => m.version)).toEqual(list.map((_, i) => i + 1));
    const db = new Database(':memory:');
    expect(migrate(db, ':memory:')).toEqual(list.map((m) => m.version));
    expect(migrate(db, ':memory:')).toEqual([]);
    const rows = db.prepare('SELECT version, name FROM schema_migrations ORDER BY version').all();
    expect(rows).toEqual(list.map((m) => ({ version: m.version, name: m.name })));
  });

  it('apply a new numbered file on the next open, leaving earlier ones alone', () => {
    const dir = tmp();
    const mig = path.join(dir, 'migrations');
    mkdirSync(mig);
    // (The key store's own migrations sit in a folder of their own, migrations/keystore/.)
    for (const f of readdirSync(MIGRATIONS_DIR).filter((n) => n.endsWith('.sql')))
      copyFileSync(new URL(f, MIGRATIONS_DIR), path.join(mig, f));
    const db = new Database(':memory:');
    const url = pathToFileURL(mig + '/');
    migrate(db, 'x', readMigrations(url));
    const next = String(readMigrations(url).length + 1).padStart(3, '0');
    writeFileSync(path.join(mig, `${next}_add_note.sql`), 'ALTER TABLE items ADD COLUMN note TEXT;');
    expect(migrate(db, 'x', readMigrations(url))).toEqual([Number(next)]);
    expect(schemaVersion(db)).toBe(Number(next));
  });

  it('refuse a ledger newer than this darkroom', () => {
    const db = new Database(':memory:');
    migrate(db, 'x');
    db.prepare('INSERT INTO schema_migrations (version, name, applied_ms) VALUES (999, ?, 0)').run('999_future');
    expect(() => migrate(db, 'x')).toThrow(LedgerTooNewError);
  });
});

describe('Ledger.open', () => {
  it('creates the ledger readable by its owner only, in WAL with synchronous=FULL', () => {
    const file = path.join(tmp(), 'sub', 'darkroom.db');
    const ledger = Ledger.open(file);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const db = new Database(file, { readonly: true });
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    db.close();
    ledger.close();
  });

  it('sets synchronous=FULL on the writing connection', () => {
    const file = path.join(tmp(), 'darkroom.db');
    const ledger = Ledger.open(file);
    // synchronous is per connection: read it through the ledger's own handle.
    const db = (ledger as unknown as { db: Database.Database }).db;
    expect(db.pragma('synchronous', { simple: true })).toBe(2);
    ledger.close();
  });

  it('refuses to open a missing ledger for reading, with a hint', () => {
    expect(() => Ledger.open(path.join(tmp(), 'nope.db'), { readonly: true })).toThrow(LedgerMissingError);
  });
});
