import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chooseBucketMs, Ledger, type ReportData } from '../../src/ledger/index.js';
import { FAILED_REASON, HELD_REASON, makeReportFixture, SKIPPED_REASON, START_MS } from './fixture.js';

describe('the ledger read behind `darkroom report`', () => {
  let dir: string;
  let ledger: Ledger;
  let r: ReportData;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'darkroom-report-ledger-'));
    ({ ledger } = await makeReportFixture(dir, { memoryLedger: true }));
    r = ledger.report({}, START_MS + 3_600_000);
  });
  afterAll(() => {
    ledger.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('counts items the way status does', () => {
    expect(r.status).toMatchObject({ total: 8, done: 5, failed: 1, skipped: 1, held: 1, pending: 1 });
    expect(r.status.problems).toEqual([]); // the report reads its own problem list
  });

  it("lists done items by path with each step's capability, the task that succeeded and how many were made", () => {
    expect(r.done.map((d) => d.path)).toEqual([
      'album 1951/beach.jpg',
      'album 1951/picnic.jpg',
      'family/grandma & grandpa <wedding>.png',
      'loose/harbour.webp',
      'loose/result-gone.jpg',
    ]);
    const picnic = r.done[1]!;
    expect(picnic.steps).toEqual([
      { step: 0, capability: 'restore', taskId: expect.stringMatching(/^task-\d+-0-2$/), attempts: 2 },
      { step: 1, capability: 'upscale', taskId: expect.stringMatching(/^task-\d+-1-1$/), attempts: 1 },
    ]);
    expect(picnic.outputPath).toMatch(/restored\/album 1951\/picnic\.jpg$/);
    expect(picnic.srcPath).toMatch(/photos\/album 1951\/picnic\.jpg$/);
    expect(picnic.doneMs).toBeGreaterThan(START_MS);
  });

  it('caps the pairs but not the counts', () => {
    const capped = ledger.report({ pairLimit: 2 });
    expect(capped.done).toHaveLength(2);
    expect(capped.done[1]!.steps).toHaveLength(2);
    expect(capped.status.done).toBe(5);
  });

  it('lists held first, then failed, then skipped, with reasons and both request ids', () => {
    expect(r.problems.map((p) => p.state)).toEqual(['held', 'failed', 'skipped']);
    expect(r.problemCount).toBe(3);
    const [held, failed, skipped] = r.problems;
    expect(held).toMatchObject({ path: 'held/timeout.jpg', reason: HELD_REASON, sentRequestId: 'dr-held-0001', requestId: null });
    expect(failed).toMatchObject({ path: 'failed/no-face.jpg', reason: FAILED_REASON, requestId: 'srv-fail-777', step: 0 });
    expect(failed!.sentRequestId).toMatch(/^dr-\d+-0-1$/);
    expect(failed!.taskId).toMatch(/^task-/);
    expect(skipped).toMatchObject({ path: 'notes.txt', reason: SKIPPED_REASON, sentRequestId: null });
  });

  it('figures: calls by endpoint and key, refusals, task latency from attempts', () => {
    // 7 uploads + 1 extra 429 upload, 13 creates (5×2 + 1 retry + failed + held), 12 polls
    expect(r.calls.total).toBe(33);
    expect(r.calls.byEndpoint.find((e) => e.endpoint === '/api/v1/tasks/{businessType}/{taskId}')?.n).toBe(12);
    expect(r.calls.byKey).toEqual([{ keyFp: 'k_0123456789ab', n: 33 }]);
    expect(r.calls.limited).toBe(1);
    expect(r.tasks.created).toBe(12);
    expect(r.tasks.polls).toBe(12);
    const restore = r.tasks.latency.find((l) => l.capability === 'restore')!;
    // restore SUCCESS latencies: 30, 35, 40, 45, 50 s
    expect(restore).toMatchObject({ tasks: 5, meanMs: 40_000, minMs: 30_000, maxMs: 50_000 });
    expect(r.tasks.latency.find((l) => l.capability === 'upscale')).toMatchObject({ tasks: 5, meanMs: 20_000 });
    expect(r.tasks.meanLatencyMs).toBe(30_000);
  });

  it('throughput buckets cover the whole span and add up to the done count', () => {
    expect(r.span!.startMs).toBe(START_MS);
    const { bucketMs, buckets } = r.throughput;
    expect(bucketMs).toBe(chooseBucketMs(r.span!.endMs - r.span!.startMs));
    expect(buckets.reduce((a, b) => a + b.done, 0)).toBe(5);
    expect(buckets[0]!.startMs).toBeLessThanOrEqual(r.span!.startMs);
    expect(buckets.at(-1)!.startMs + bucketMs).toBeGreaterThan(r.span!.endMs);
    for (let i = 1; i < buckets.length; i++) expect(buckets[i]!.startMs - buckets[i - 1]!.startMs).toBe(bucketMs);
    expect(r.doneSpan!.lastMs).toBeLessThanOrEqual(r.span!.endMs);
  });

  it('chooses round bucket sizes: 10 min for a night, seconds for a demo', () => {
    expect(chooseBucketMs(8 * 3_600_000)).toBe(600_000);
    expect(chooseBucketMs(5 * 60_000)).toBe(10_000);
    expect(chooseBucketMs(0)).toBe(10_000);
    expect(chooseBucketMs(30 * 86_400_000)).toBe(86_400_000);
    expect(chooseBucketMs(300 * 86_400_000) / 86_400_000).toBe(5);
  });

  it('an empty ledger reads without error', () => {
    const empty = Ledger.open(':memory:');
    const e = empty.report();
    expect(e.status.total).toBe(0);
    expect(e.done).toEqual([]);
    expect(e.span).toBeNull();
    expect(e.throughput.buckets).toEqual([]);
    expect(e.tasks.meanLatencyMs).toBeNull();
    empty.close();
  });
});
