import { afterEach, describe, expect, it } from 'vitest';
import { VirtualClock } from '../../src/clock.js';
import { Ledger } from '../../src/ledger/index.js';
import { SimModel } from '../../src/sim/model.js';
import { makeJob } from '../helpers/job.js';
import { SIM_KEY, simulate } from '../helpers/simulate.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

const START = Date.UTC(2026, 10, 22, 20);
const PAUSE_S = 600;

describe('a pause the service asked for, across a restart', () => {
  it('is kept in the ledger: a run started again within it makes no call before it ends', async () => {
    const job = await makeJob({ photos: 4, steps: [{ capability: 'enhance' }] });
    cleanups.push(job.cleanup);
    const clock = new VirtualClock(START);
    const model = new SimModel({ keys: [SIM_KEY], seed: 4, resultOrigin: 'http://results.invalid', processing: 'passthrough' });
    const ledger = Ledger.open(':memory:');

    // The first create meets a 429 with Retry-After 600 s; the run is stopped a minute later.
    let refused = false;
    const ac = new AbortController();
    const first = await simulate({
      job,
      model,
      ledger,
      clock,
      signal: ac.signal,
      intercept: async (req, forward) => {
        if (!refused && req.method === 'POST' && req.url.includes('/generate')) {
          refused = true;
          clock.setTimer(() => ac.abort(new Error('stop')), 60_000);
          return {
            status: 429,
            headers: { 'content-type': 'application/json', 'retry-after': String(PAUSE_S), 'ratelimit-scope': 'global_minute' },
            body: Buffer.from(JSON.stringify({ code: -1000, message: 'busy', requestId: 'r-429' })),
          };
        }
        return forward();
      },
    });
    expect(refused).toBe(true);
    expect(first.result.exitCode).toBe(130);
    const pausedAt = ledger.calls.pausedUntil(ledger.calls.countSince(0)[0]!.key_fp);
    expect(pausedAt).toBeGreaterThanOrEqual(START + PAUSE_S * 1000);

    // Started again a minute and a half in: its first call waits for the pause's end.
    const restartAt = clock.now();
    expect(restartAt).toBeLessThan(pausedAt);
    const callsBefore = ledger.calls.total();
    const sent: number[] = [];
    const second = await simulate({
      job,
      model,
      ledger,
      clock,
      intercept: async (req, forward) => {
        // Keyed calls: the first contact asks without the key, outside the key's pause (serviceContact.ts).
        if (req.headers['x-api-key'] !== undefined) sent.push(clock.now());
        return forward();
      },
    });
    expect(second.result.exitCode).toBe(0);
    expect(ledger.calls.total()).toBeGreaterThan(callsBefore);
    expect(Math.min(...sent)).toBeGreaterThanOrEqual(pausedAt);
  });
});
