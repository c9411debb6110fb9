import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { readMigrations } from '../../src/ledger/sqliteFile.js';
import { makeTempDir } from '../helpers/job.js';

/**
 * Two runs started at once on a ledger that does not exist yet both open and migrate it
 * before either can take the run lock (the lock's table is itself a migration). Each
 * migration re-reads the version inside its IMMEDIATE transaction, so none is applied twice
 * and neither process fails on "table already exists".
 *
 * Real processes (the built ledger, as `darkroom run` loads it), released at one instant.
 */

const LEDGER = fileURLToPath(new URL('../../dist/ledger/index.js', import.meta.url));
const dirs: string[] = [];
afterEach(() => {
  while (dirs.length) rmSync(dirs.pop()!, { recursive: true, force: true });
});

/** Open `file` at wall-clock time `atMs` (spun for, so every process starts within a millisecond). */
function openAt(file: string, atMs: number): Promise<string> {
  const code = `
    const { Ledger } = await import(${JSON.stringify(LEDGER)});
    while (Date.now() < ${atMs});
    try { Ledger.open(${JSON.stringify(file)}).close(); console.log('ok'); }
    catch (e) { console.log('failed: ' + e.message); }`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  return new Promise((resolve) => child.on('close', () => resolve(out.trim())));
}

describe('migrations under two processes at once', () => {
  it('a new ledger opened by 3 processes at the same instant, 3 times: every open succeeds, each migration recorded once', async () => {
    const versions = readMigrations().map((m) => m.version);
    for (let round = 0; round < 3; round++) {
      const dir = makeTempDir('darkroom-migrate-race-');
      dirs.push(dir);
      const file = path.join(dir, 'darkroom.db');
      // Far enough ahead for three Node processes to load on a busy machine.
      const at = Date.now() + 2000;
      const results = await Promise.all([openAt(file, at), openAt(file, at), openAt(file, at)]);
      expect({ round, results }).toEqual({ round, results: ['ok', 'ok', 'ok'] });
      const db = new Database(file, { readonly: true });
      expect(
        db
          .prepare('SELECT version FROM schema_migrations ORDER BY version')
          .all()
          .map((r) => (r as { version: number }).version),
      ).toEqual(versions);
      db.close();
    }
  }, 120_000);
});
