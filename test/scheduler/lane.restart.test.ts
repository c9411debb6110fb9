import { afterEach, describe, expect, it } from 'vitest';
import { fingerprintKey } from '../../src/spec/key.js';
import { Ledger } from '../../src/ledger/index.js';
import { SimModel } from '../../src/sim/model.js';
import { VirtualClock } from '../../src/clock.js';
import { SIM_KEY, simulate } from '../helpers/simulate.js';
import { makeJob } from '../helpers/job.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

describe('the call budget across a restart', () => {
  it('is rebuilt from the ledger, so two runs within the hour never exceed the hour window together', async () => {
    // Hour-bound: 500 photos need ~1,600 calls, more than one hour's 1,000.
    const job = await makeJob({ photos: 500, steps: [{ capability: 'enhance' }] });
    cleanups.push(job.cleanup);
    const clock = new VirtualClock(Date.UTC(2026, 10, 22, 20));
    const model = new SimModel({
      keys: [SIM_KEY],
      seed: 9,
      resultOrigin: 'http://results.invalid',
      processing: 'passthrough',
      latency: { medianMs: 20_000, sigma: 0.5 },
    });
    const ledger = Ledger.open(':memory:');
    // Stop the first run a quarter of an hour in: about half an hour's budget is spent.
    const ac = new AbortController();
    clock.setTimer(() => ac.abort(new Error('stop')), 15 * 60_000);
    const first = await simulate({ job, model, ledger, clock, signal: ac.signal });
    expect(first.result.exitCode).toBe(130);
    const spent = first.result.status.calls.total;
    expect(spent).toBeGreaterThan(100);

    const second = await simulate({ job, model, ledger, clock });
    expect(second.result.status.pending).toBe(0);
    const k = second.audit.keys[fingerprintKey(SIM_KEY)]!;
    // The audit sees both runs' calls as one stream: no rolling hour ever held more than 1,000.
    expect(k.maxCallsInAnyHour).toBeLessThanOrEqual(1000);
    expect(k.maxCallsInAnyMinute).toBeLessThanOrEqual(100);
    expect(k.maxActiveTasks).toBeLessThanOrEqual(3);
    expect(k.calls).toBeGreaterThan(1000);
  });
});
