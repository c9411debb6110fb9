import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installClock, VirtualClock } from '../../src/clock.js';
import { Ledger } from '../../src/ledger/index.js';
import { ProgressReader } from '../../src/ledger/read/progress.js';
import { readSummary } from '../../src/lib/status.js';
import { discovered, putAt } from '../helpers/discovered.js';

/**
 * `status --watch` redraws every 2 s through one reader (ProgressReader) for its whole life. On
 * a ledger that keeps its own counts, a redraw reads the counts, the problems it lists and what
 * happened since the last one: no query of a refresh reads a table that grows with the archive
 * from end to end (EXPLAIN QUERY PLAN: no SCAN of items, calls, transitions, attempts,
 * submissions, inputs, output_files or reviews), and the decisions that stand are read from
 * the ledger's count of them, not from the reviews. What it shows is what a fresh `status` shows.
 */
const PHOTOS = 1_500;
/** Tables whose size does not grow with the archive (or, for the partial index, only with its problems). */
const SMALL =
  /^(SCAN (item_counts|call_counts|attempt_counts|step_capabilities|review_counts|meta|sqlite_master|sqlite_schema|run_lock|schema_migrations|CONSTANT ROW)\b|SCAN \S+ USING (COVERING )?INDEX output_files_meta_note\b)/;

let dir: string;
let file: string;
let restore: () => void;
const clock = new VirtualClock(Date.UTC(2026, 5, 1, 20));

function plans(db: Database.Database, sqls: Iterable<string>): string[] {
  const out: string[] = [];
  for (const sql of new Set(sqls)) {
    if (!/^\s*(SELECT|WITH)/i.test(sql)) continue;
    const params = (sql.match(/\?/g) ?? []).map(() => 0);
    for (const r of db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as { detail: string }[]) out.push(r.detail);
  }
  return out;
}

function logCalls(l: Ledger, n: number): void {
  for (let c = 0; c < n; c++) {
    clock.advanceBy(600);
    l.calls.log({
      at_ms: clock.now(),
      key_fp: 'k',
      method: 'GET',
      endpoint: '/api/v1/tasks/{businessType}/{taskId}',
      http_status: 200,
      code: 0,
      request_id: null,
      sent_request_id: `s${clock.now()}`,
      duration_ms: 90,
      error: null,
    });
  }
}

beforeAll(() => {
  restore = installClock(clock);
  dir = mkdtempSync(path.join(tmpdir(), 'darkroom-refresh-'));
  file = path.join(dir, 'darkroom.db');
  const l = Ledger.open(file);
  const db = (l as unknown as { db: Database.Database }).db;
  db.transaction(() => {
    discovered(
      l,
      Array.from({ length: PHOTOS }, (_, i) => `roll-${Math.floor(i / 100)}/frame-${i}.jpg`),
    );
    for (let id = 1; id <= PHOTOS - 100; id++) putAt(l, id, 0, id % 50 === 0 ? 'failed' : id % 77 === 0 ? 'held' : 'done', 1);
    logCalls(l, 3 * PHOTOS);
    const done = l.items.all().filter((i) => i.state === 'done');
    for (const i of done.slice(0, 200)) l.reviews.record(i.id, i.id % 3 === 0 ? 'reject' : 'accept', null);
  })();
  l.close();
});

afterAll(() => {
  restore();
  rmSync(dir, { recursive: true, force: true });
});

describe('a refresh of status --watch', () => {
  it('reads what changed since the last one, not the whole ledger, and shows what a fresh status shows', () => {
    const queries: string[] = [];
    const reader = ProgressReader.open(file, { trace: (sql) => queries.push(sql) });
    const writer = Ledger.open(file);
    try {
      readSummary(reader, null, undefined);
      reader.runHolder();
      // A run goes on: photos taken on and finished, calls made.
      for (let id = PHOTOS - 99; id <= PHOTOS - 90; id++) putAt(writer, id, 0, 'done', 1);
      logCalls(writer, 30);
      queries.length = 0;
      const { summary } = readSummary(reader, null, undefined);
      reader.runHolder();
      const raw = new Database(file, { readonly: true });
      try {
        const scans = plans(raw, queries).filter((d) => d.startsWith('SCAN') && !SMALL.test(d));
        expect(scans, 'whole tables read by one refresh').toEqual([]);
      } finally {
        raw.close();
      }
      expect(
        queries.some((q) => /FROM reviews r/.test(q)),
        'the decisions read again though none changed',
      ).toBe(false);

      const fresh = ProgressReader.open(file);
      try {
        expect(summary).toEqual(readSummary(fresh, null, undefined).summary);
        // A decision: the next refresh reads the decisions again, and counts it.
        const id = writer.items.all().find((i) => i.state === 'done' && writer.reviews.photo(i.id)!.decision === null)!.id;
        writer.reviews.record(id, 'reject', writer.reviews.photo(id)!.sha256, 'blurred');
        const next = readSummary(reader, null, undefined).summary;
        expect(next.review).toEqual(readSummary(fresh, null, undefined).summary.review);
        expect(next.review.rejected).toBe(summary.review.rejected + 1);
      } finally {
        fresh.close();
      }
    } finally {
      writer.close();
      reader.close();
    }
  });
});
