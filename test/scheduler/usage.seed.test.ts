import { afterEach, describe, expect, it } from 'vitest';
import { fingerprintKey } from '../../src/spec/key.js';
import { installClock, VirtualClock } from '../../src/clock.js';
import { Ledger } from '../../src/ledger/index.js';
import { SimModel } from '../../src/sim/model.js';
import { makeJob } from '../helpers/job.js';
import { SIM_KEY, simulate } from '../helpers/simulate.js';

/**
 * Issue 12, point 4, across machines: the service is the truth. A run that has work
 * reads the key's usage (GET /api/v1/usage, one call) before anything else and counts the
 * calls the service saw beyond its own as other clients', so it does not run into them;
 * a rerun with nothing to do makes no call at all.
 */

const FP = fingerprintKey(SIM_KEY);
const START = Date.UTC(2026, 10, 22, 20);
const cleanups: (() => void)[] = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

/** Another machine's client of the same key: `n` calls to the model, at the clock's now. */
async function elsewhere(model: SimModel, clock: VirtualClock, n: number): Promise<void> {
  const restore = installClock(clock);
  try {
    for (let i = 0; i < n; i++) {
      await model.handleApi({ method: 'GET', path: '/api/v1/credits', headers: { 'x-api-key': SIM_KEY }, body: Buffer.alloc(0) });
    }
  } finally {
    restore();
  }
}

describe("the key's windows at the start of a run", () => {
  it('are seeded from GET /usage: calls made elsewhere with the key are counted, and never run into', async () => {
    const job = await makeJob({ photos: 10, steps: [{ capability: 'enhance' }] });
    cleanups.push(job.cleanup);
    const clock = new VirtualClock(START);
    const model = new SimModel({
      keys: [SIM_KEY],
      seed: 8,
      resultOrigin: 'http://results.invalid',
      processing: 'passthrough',
      latency: { medianMs: 5_000, sigma: 0.3 },
    });
    // Another machine spent 90 of the minute's 100 calls a few seconds ago.
    await elsewhere(model, clock, 90);
    clock.advanceBy(5_000);
    const paths: string[] = [];
    const usage: number[] = [];
    const r = await simulate({
      job,
      model,
      clock,
      intercept: async (req, forward) => {
        // Keyed calls: the first contact is one request without the key (serviceContact.ts).
        if (req.headers['x-api-key'] !== undefined) paths.push(new URL(req.url).pathname);
        if (req.url.endsWith('/usage')) usage.push(clock.now());
        return forward();
      },
    });
    expect(r.result.status).toMatchObject({ total: 10, done: 10 });
    expect(paths[0]).toBe('/api/v1/usage');
    // The key turned out shared: its usage is read again while the run spends under a share
    // (run/keys.ts watchShare), once a minute at most.
    for (let i = 1; i < usage.length; i++) expect(usage[i]! - usage[i - 1]!).toBeGreaterThanOrEqual(60_000);
    const k = r.audit.keys[FP]!;
    // The run's ~35 calls and the other machine's 90 never met the service's minute limit.
    expect(k.calls).toBeGreaterThan(120);
    expect(k.rejected429).toBe(0);
    expect(k.maxCallsInAnyMinute).toBeLessThanOrEqual(100);
  });

  it('are not asked for by a rerun with nothing to do: it makes no call', async () => {
    const job = await makeJob({ photos: 3, steps: [{ capability: 'enhance' }] });
    cleanups.push(job.cleanup);
    const ledger = Ledger.open(':memory:');
    cleanups.push(() => ledger.close());
    const first = await simulate({ job, ledger });
    expect(first.result.status).toMatchObject({ total: 3, done: 3 });
    const calls = first.audit.keys[FP]!.calls;
    const again = await simulate({ job, ledger, model: first.model, clock: first.clock });
    expect(again.result.exitCode).toBe(0);
    expect(again.audit.keys[FP]!.calls).toBe(calls);
  });
});
