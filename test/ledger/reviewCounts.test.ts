import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/ledger/open.js';
import { readStandingCounts } from '../../src/ledger/reviews.js';

/**
 * The standing decisions the ledger counts itself (migrations/015_review_counts.sql): a decision
 * stands while its photo is done and the photo's output file has the checksum the decision was
 * about, so the count moves with reviews, the photos' states and output paths, and the output
 * files' paths and checksums. Thousands of random changes to all of them — one at a time and
 * several in one transaction, photos sharing an output name, files renamed, decisions taken
 * back — and after each the kept count is the count of the rows. And each trigger reads what
 * it needs by key (migration 016): never every done photo for one output file written.
 */
const dir = mkdtempSync(path.join(os.tmpdir(), 'darkroom-review-counts-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A small deterministic generator (mulberry32): the same changes on every run. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function kept(db: Database.Database): { accepted: number; rejected: number } {
  const rows = db.prepare('SELECT decision, n FROM review_counts').all() as { decision: string; n: number }[];
  return {
    accepted: rows.find((r) => r.decision === 'accept')?.n ?? 0,
    rejected: rows.find((r) => r.decision === 'reject')?.n ?? 0,
  };
}

const PHOTOS = 12;
const NAMES = ['a.png', 'b.png', 'c.png', 'd.png', 'e.png', 'f.png'];
const SUMS = ['sum1', 'sum2', null];
const STATES = ['done', 'done', 'queued', 'failed', 'active'];

function setUp(file: string): Database.Database {
  const db = openDatabase(file);
  const photo = db.prepare(
    "INSERT INTO items (id, rel_path, src_path, state, output_path, created_ms, updated_ms) VALUES (?, ?, ?, 'done', ?, 0, 0)",
  );
  for (let id = 1; id <= PHOTOS; id++) photo.run(id, `p${id}.png`, `/in/p${id}.png`, NAMES[id % NAMES.length]);
  return db;
}

/** One random change to one of the columns a standing decision depends on. */
function change(db: Database.Database, pick: <T>(xs: readonly T[]) => T): void {
  const id = pick(Array.from({ length: PHOTOS }, (_, i) => i + 1));
  const name = pick(NAMES);
  const sum = pick(SUMS);
  switch (pick(['decide', 'decide', 'take back', 'state', 'output', 'write', 'remove', 'rename', 'checksum'])) {
    case 'decide':
      db.prepare(
        `INSERT INTO reviews (item_id, decision, output_sha256, output_path, at_ms) VALUES (?, ?, ?, ?, 0)
         ON CONFLICT (item_id) DO UPDATE SET decision = excluded.decision, output_sha256 = excluded.output_sha256`,
      ).run(id, pick(['accept', 'reject']), sum, name);
      break;
    case 'take back':
      db.prepare('DELETE FROM reviews WHERE item_id = ?').run(id);
      break;
    case 'state':
      db.prepare('UPDATE items SET state = ? WHERE id = ?').run(pick(STATES), id);
      break;
    case 'output':
      db.prepare('UPDATE items SET output_path = ? WHERE id = ?').run(pick([...NAMES, null]), id);
      break;
    case 'write':
      db.prepare(
        `INSERT INTO output_files (path, item_id, kind, bytes, written_ms, sha256) VALUES (?, ?, 'output', 1, 0, ?)
         ON CONFLICT (path) DO UPDATE SET sha256 = excluded.sha256, item_id = excluded.item_id`,
      ).run(name, id, sum);
      break;
    case 'remove':
      db.prepare('DELETE FROM output_files WHERE path = ?').run(name);
      break;
    case 'rename':
      db.prepare('UPDATE OR IGNORE output_files SET path = ? WHERE path = ?').run(pick(NAMES), name);
      break;
    case 'checksum':
      db.prepare('UPDATE output_files SET sha256 = ? WHERE path = ?').run(sum, name);
      break;
  }
}

describe('the standing decisions the ledger counts', () => {
  it('are the count of the rows after every change, alone or several in one transaction', () => {
    const db = setUp(path.join(dir, 'random.db'));
    const next = random(20261128);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)]!;
    let standing = 0;
    for (let step = 0; step < 3_000; step++) {
      if (next() < 0.3) db.transaction(() => Array.from({ length: 1 + Math.floor(next() * 5) }, () => change(db, pick)))();
      else change(db, pick);
      const fromRows = readStandingCounts(db);
      expect(kept(db), `after change ${step}`).toEqual(fromRows);
      standing = Math.max(standing, fromRows.accepted + fromRows.rejected);
    }
    // The changes did reach decisions that stand, of both kinds.
    expect(standing).toBeGreaterThan(3);
    db.close();
  });

  it('are counted from the rows a ledger had when it was migrated', () => {
    const file = path.join(dir, 'older.db');
    const db = setUp(file);
    // As the ledger was before migration 015: no counts, no triggers.
    for (const t of db.prepare("SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'review_counts_%'").all() as {
      name: string;
    }[])
      db.exec(`DROP TRIGGER ${t.name}`);
    db.exec('DROP TABLE review_counts');
    db.prepare(
      "INSERT INTO output_files (path, item_id, kind, bytes, written_ms, sha256) VALUES ('b.png', 1, 'output', 1, 0, 'sum1')",
    ).run();
    db.prepare("INSERT INTO reviews (item_id, decision, output_sha256, at_ms) VALUES (1, 'reject', 'sum1', 0)").run();
    db.prepare("INSERT INTO reviews (item_id, decision, output_sha256, at_ms) VALUES (2, 'accept', 'sum2', 0)").run();
    db.prepare("INSERT INTO reviews (item_id, decision, output_sha256, at_ms) VALUES (3, 'accept', NULL, 0)").run();
    db.exec('DELETE FROM schema_migrations WHERE version >= 15');
    db.close();
    const again = openDatabase(file);
    // Photo 1's output b.png is the one rejected; photo 2's c.png has no file (not sum2); photo 3's d.png has none either (NULL).
    expect(kept(again)).toEqual({ accepted: 1, rejected: 1 });
    expect(kept(again)).toEqual(readStandingCounts(again));
    again.close();
  });

  it('are kept by statements that find the rows they change by key: a photo, a review, the photos of one output', () => {
    const db = setUp(path.join(dir, 'plans.db'));
    const triggers = db.prepare("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'review_counts_%'").all() as {
      name: string;
      sql: string;
    }[];
    expect(triggers).toHaveLength(9);
    for (const t of triggers) {
      // Each statement of the trigger's body, its row's columns given as values, planned as SQLite plans it in the trigger.
      const body = t.sql.slice(t.sql.indexOf(' BEGIN') + 6, t.sql.lastIndexOf('END'));
      for (const statement of body.split(';').filter((s) => s.trim() !== '')) {
        const sql = statement.replace(/\b(new|old)\.state\b/g, "'done'").replace(/\b(new|old)\.\w+/g, "'x'");
        const plan = (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all() as { detail: string }[]).map((r) => r.detail);
        // Never every done photo (the items by state), nor any table from end to end but the two rows of review_counts.
        expect(
          plan.filter((d) => /INDEX items_state\b|^SCAN (?!review_counts\b)/.test(d)),
          `${t.name}: ${plan.join(' / ')}`,
        ).toEqual([]);
      }
    }
    db.close();
  });
});
