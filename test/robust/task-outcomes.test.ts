import { afterEach, describe, expect, it } from 'vitest';
import type { WireResponse } from '../../src/api/index.js';
import { installClock } from '../../src/clock.js';
import { Ledger } from '../../src/ledger/index.js';
import { makeJob } from '../helpers/job.js';
import { simulate } from '../helpers/simulate.js';
import { look as query } from '../helpers/ledger.js';

/**
 * Issue 4, point 2: what a task's end means. FAIL is created again (reusing the uploaded
 * image) up to maxAttempts; ERROR and OTHER fail the photo with the reason; a task that
 * vanishes (404/-60404) is created again once, recorded; past the polling cap the photo
 * is held as timed out.
 */

const cleanups: (() => void)[] = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

async function fileJob(opts: Parameters<typeof makeJob>[0]) {
  const job = await makeJob(opts);
  const ledger = Ledger.open(job.ledgerFile);
  cleanups.push(job.cleanup, () => ledger.close());
  return { job, ledger };
}

describe('task outcomes', () => {
  it('FAIL: created again up to maxAttempts with the same uploaded image, then failed with the reason', async () => {
    const { job, ledger } = await fileJob({ photos: 4, steps: [{ capability: 'enhance' }], extra: { maxAttempts: 3 } });
    const r = await simulate({ job, ledger, sim: { outcomes: { fail: 1 } } });
    expect(r.result.status).toMatchObject({ total: 4, done: 0, failed: 4 });
    const k = Object.values(r.audit.keys)[0]!;
    expect(k.uploads).toBe(4);
    expect(Object.values(r.audit.createsPerSource)).toEqual([3, 3, 3, 3]);
    for (const p of r.result.status.problems) expect(p.reason).toMatch(/enhance ended FAIL on all 3 attempts/);
    // Every create of a photo used the one image URL its upload gave.
    const inputs = query<{ item_id: number; n: number }>(
      job.ledgerFile,
      `SELECT item_id, COUNT(DISTINCT s.request_id) AS n FROM submissions s GROUP BY item_id`,
    );
    expect(inputs.map((i) => i.n)).toEqual([3, 3, 3, 3]);
    expect(query(job.ledgerFile, "SELECT COUNT(*) AS n FROM attempts WHERE status = 'FAIL'")).toEqual([{ n: 12 }]);
  });

  it.each([
    ['ERROR', { error: 1 }, /ended ERROR \(not retryable\)/],
    ['OTHER', { other: 1 }, /ended OTHER \(discarded or unknown to the public API\)/],
  ])('%s: failed at once with the reason, never created again', async (_s, outcomes, reason) => {
    const r = await simulate({ photos: 3, steps: [{ capability: 'enhance' }], sim: { outcomes } });
    cleanups.push(r.job.cleanup);
    expect(r.result.status).toMatchObject({ total: 3, failed: 3, done: 0 });
    expect(r.result.exitCode).toBe(1);
    expect(Object.values(r.audit.createsPerSource)).toEqual([1, 1, 1]);
    for (const p of r.result.status.problems) expect(p.reason).toMatch(reason);
  });

  it('404/-60404 for a task we created: created again once, recorded as expired', async () => {
    const { job, ledger } = await fileJob({ photos: 4, steps: [{ capability: 'enhance' }] });
    // Every source loses its first task at its first poll (the simulator lets each lose only
    // one): no poll has answered yet, and still no photo is lost.
    const r = await simulate({ job, ledger, sim: { faults: { vanishedTask: { probability: 1, minAgeMs: 1 } } } });
    expect(r.result.status).toMatchObject({ total: 4, done: 4, failed: 0 });
    expect(r.audit.faults.vanishedTask).toBe(4);
    expect(Object.values(r.audit.createsPerSource)).toEqual([2, 2, 2, 2]);
    const expired = query<{ status: string; reason: string }>(
      job.ledgerFile,
      "SELECT status, reason FROM attempts WHERE status = 'EXPIRED'",
    );
    expect(expired).toHaveLength(4);
    for (const e of expired) expect(e.reason).toMatch(/vanished \(404\/-60404, requestId [^)]+\); creating it again once/);
  });

  it('a task that vanishes again after being created anew fails the photo', async () => {
    const notFound = (): WireResponse => ({
      status: 404,
      headers: {},
      body: Buffer.from(JSON.stringify({ code: -60404, message: 'task not found', requestId: 'srv-404' })),
    });
    let polls = 0;
    const r = await simulate({
      photos: 1,
      steps: [{ capability: 'enhance' }],
      // The first poll is answered normally (the businessType is proven right); every later one is 404.
      intercept: async (req, forward) => (req.url.includes('/tasks/') && ++polls > 1 ? notFound() : forward()),
      sim: { latency: { medianMs: 60_000, sigma: 0.1 } },
    });
    cleanups.push(r.job.cleanup);
    expect(r.result.status).toMatchObject({ total: 1, failed: 1 });
    expect(r.result.status.problems[0]!.reason).toMatch(/vanished \(404\) again after being created anew/);
    expect(Object.values(r.audit.createsPerSource)).toEqual([2]);
  });

  it('a 404 on every first poll (a wrong businessType) costs the first wave a second create, not every photo', async () => {
    const notFound = (): WireResponse => ({
      status: 404,
      headers: {},
      body: Buffer.from(JSON.stringify({ code: -60404, message: 'task not found for this businessType', requestId: 'srv-404' })),
    });
    const r = await simulate({
      photos: 20,
      steps: [{ capability: 'enhance' }],
      intercept: async (req, forward) => (req.url.includes('/tasks/') ? notFound() : forward()),
    });
    cleanups.push(r.job.cleanup);
    expect(r.result.status).toMatchObject({ total: 20, failed: 20 });
    const creates = Object.values(r.audit.createsPerSource).reduce((a, b) => a + b, 0);
    expect(creates).toBeGreaterThan(20);
    expect(creates).toBeLessThanOrEqual(20 + 2 * 3);
    expect(r.result.status.problems.filter((p) => /businessType ENHANCE .* is probably wrong/.test(p.reason ?? ''))).not.toHaveLength(0);
  });

  it('past the polling cap: held as timed out, then `retry --held` polls it again instead of creating anew', async () => {
    const { job, ledger } = await fileJob({
      photos: 2,
      steps: [{ capability: 'enhance' }],
      extra: { limits: { pollCapMinutes: 5 } },
    });
    const r = await simulate({ job, ledger, sim: { latency: { medianMs: 8 * 60_000, sigma: 0.01 } } });
    expect(r.result.status).toMatchObject({ total: 2, held: 2, done: 0 });
    for (const p of r.result.status.problems) expect(p.reason).toMatch(/still (REQUESTED|PENDING) after the polling cap of 5 min; held/);
    expect(query(job.ledgerFile, 'SELECT DISTINCT hold_kind FROM items')).toEqual([{ hold_kind: 'timeout' }]);
    expect(query(job.ledgerFile, 'SELECT DISTINCT status FROM attempts')).toEqual([{ status: 'TIMEOUT' }]);

    const restore = installClock(r.clock); // the operator acts at the simulation's time
    const requeued = ledger.held.requeue(['ambiguous', 'timeout'], 'test');
    restore();
    expect(requeued).toEqual({ recreated: 0, repolled: 2 });
    const again = await simulate({ job, ledger, model: r.model, clock: r.clock });
    expect(again.result.status).toMatchObject({ total: 2, done: 2 });
    // The tasks that outlived the cap finished and were used: no second charge.
    expect(Object.values(again.audit.createsPerSource)).toEqual([1, 1]);
  });
});
