import { copyFileSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProgressReader, readProgress, type ProgressFacts } from '../../src/ledger/read/progress.js';
import { Ledger } from '../../src/ledger/index.js';
import { makeJob, type TestJob } from '../helpers/job.js';
import { simulate, VIRTUAL_START_MS } from '../helpers/simulate.js';

/**
 * The counts the ledger keeps for `status` (migrations/013_ledger_counts.sql: photos by state
 * and step, calls by key and endpoint, tasks by capability, each step's capability; 015: the
 * review decisions that stand) are changed
 * by triggers with the rows they count. After a night with tasks that ended FAIL and ERROR and
 * were created again, two steps, a photo redone from its first step (`retry --rejected`) and
 * review decisions, every figure read from them is the figure read from the rows themselves (a
 * copy of the ledger with the counts dropped reads the rows, as a ledger from before them does).
 */
let job: TestJob;
let facts: { counted: ProgressFacts; fromRows: ProgressFacts };

beforeAll(async () => {
  job = await makeJob({ photos: 14, steps: [{ capability: 'restore' }, { capability: 'upscale', resolution: '4K' }] });
  const first = await simulate({ job, ledger: job.ledgerFile, sim: { outcomes: { fail: 0.25, error: 0.08, other: 0 } }, seed: 3 });
  const l: Ledger = first.ledger;
  const done = l.items.all().filter((i) => i.state === 'done');
  expect(done.length).toBeGreaterThan(4);
  l.reviews.record(done[0]!.id, 'accept', l.reviews.photo(done[0]!.id)!.sha256);
  l.reviews.record(done[1]!.id, 'reject', l.reviews.photo(done[1]!.id)!.sha256, 'soft');
  // Sent back to its first step, and done again under a second run: its old decision no longer stands.
  expect(l.reviews.sendBack(done[1]!.id, l.reviews.photo(done[1]!.id)!.sha256, null, [], 'redo')).toBe(true);
  l.close();
  const second = await simulate({ job, ledger: job.ledgerFile, startMs: VIRTUAL_START_MS + 86_400_000, seed: 4 });
  second.ledger.close();

  const copy = path.join(job.dir, 'rows.db');
  copyFileSync(job.ledgerFile, copy);
  const rows = new Database(copy);
  rows.exec(
    'DROP TABLE item_counts; DROP TABLE call_counts; DROP TABLE attempt_counts; DROP TABLE step_capabilities; DROP TABLE review_counts',
  );
  const now = VIRTUAL_START_MS + 2 * 86_400_000;
  const reader = ProgressReader.open(job.ledgerFile);
  facts = { counted: reader.read(now), fromRows: readProgress(rows, now) };
  reader.close();
  rows.close();
}, 120_000);

afterAll(() => job?.cleanup());

describe('the counts the ledger keeps', () => {
  it('give every figure status and the progress display read, as the rows give it', () => {
    expect(facts.counted.status.total).toBe(14);
    expect(facts.counted.failRetries).toBeGreaterThan(0);
    expect(facts.counted).toEqual(facts.fromRows);
  });

  it('give photos by state and step, calls by kind, tasks by capability and the steps', () => {
    const c = facts.counted;
    expect(c.status.states).toEqual(facts.fromRows.status.states);
    expect(c.status.calls.total).toBe(c.callsByKind.upload + c.callsByKind.task + c.callsByKind.account);
    expect(c.latency.map((l) => l.capability)).toEqual(['restore', 'upscale']);
    expect(c.stepCapabilities).toEqual([
      { step: 0, capability: 'restore' },
      { step: 1, capability: 'upscale' },
    ]);
    expect(c.status.review).toEqual({ accepted: 1, rejected: 0, unreviewed: c.status.done - 1 });
  });
});
