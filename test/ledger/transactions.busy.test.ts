import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Ledger } from '../../src/ledger/index.js';
import { openDatabase } from '../../src/ledger/open.js';
import { inTransaction } from '../../src/ledger/statements.js';
import { makeTempDir } from '../helpers/job.js';
import { discovered } from '../helpers/discovered.js';

/**
 * A ledger's write transactions wait their turn when another process holds the write lock
 * for a moment — a second `darkroom run` reading the run lock before it is refused, a
 * `darkroom usage` logging its call — instead of stopping the run on "database is locked".
 * They were DEFERRED: a transaction that had read could not wait for the lock to write
 * (SQLite answers SQLITE_BUSY at once there), and recover(), the first thing a run writes,
 * reads before it writes. Seen in the stale-lock race: the winner stopped with exit 1.
 */

const SQLITE = createRequire(import.meta.url).resolve('better-sqlite3');
const dirs: string[] = [];
afterEach(() => {
  while (dirs.length) rmSync(dirs.pop()!, { recursive: true, force: true });
});

/** Another process takes the write lock, says so, and holds it for `ms`. */
function holdWriteLock(file: string, ms: number): Promise<{ held: Promise<void>; done: Promise<void> }> {
  const code = `
    const D = require(${JSON.stringify(SQLITE)});
    const db = new D(${JSON.stringify(file)});
    db.exec('BEGIN IMMEDIATE');
    process.stdout.write('locked\\n');
    setTimeout(() => { db.exec('ROLLBACK'); db.close(); }, ${ms});`;
  const child = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  const held = new Promise<void>((resolve) => child.stdout.on('data', () => resolve()));
  const done = new Promise<void>((resolve) => child.on('close', () => resolve()));
  return Promise.resolve({ held, done });
}

describe('write transactions beside a brief writer in another process', () => {
  it('recover() (reads, then writes) waits for the lock and does its work', async () => {
    const dir = makeTempDir('darkroom-busy-');
    dirs.push(dir);
    const file = path.join(dir, 'darkroom.db');
    const ledger = Ledger.open(file);
    try {
      discovered(ledger, ['a.jpg']);
      ledger.items.move(1, 'queued', 'uploading', { key_fp: 'k_1' });
      ledger.items.move(1, 'uploading', 'uploaded', { input_url: 'http://x/1.jpg', image_url: 'http://x/1.jpg' });
      ledger.submissions.begin(ledger.items.get(1)!, 'enhance', 'k_1', 'dr-1'); // in flight when a run died

      const other = await holdWriteLock(file, 400);
      await other.held;
      expect(ledger.recover()).toEqual({ ambiguous: 1, uploadsRestarted: 0, downloadsRestarted: 0 });
      expect(ledger.items.get(1)!.state).toBe('held');
      await other.done;
    } finally {
      ledger.close();
    }
  });

  it('the shared transaction helper (every state change) waits too, for a change that reads before it writes', async () => {
    const dir = makeTempDir('darkroom-busy-');
    dirs.push(dir);
    const file = path.join(dir, 'darkroom.db');
    const db = openDatabase(file);
    try {
      const other = await holdWriteLock(file, 400);
      await other.held;
      inTransaction(db, () => {
        const n = (db.prepare('SELECT COUNT(*) AS n FROM meta').get() as { n: number }).n;
        db.prepare('INSERT INTO meta (key, value) VALUES (?, ?)').run('seen', String(n));
      });
      expect(db.prepare('SELECT value FROM meta WHERE key = ?').get('seen')).toEqual({ value: '0' });
      await other.done;
    } finally {
      db.close();
    }
  });
});
