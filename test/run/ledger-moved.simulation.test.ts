import { renameSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { WireRequest, WireResponse } from '../../src/api/index.js';
import { Ledger } from '../../src/ledger/index.js';
import { makeJob } from '../helpers/job.js';
import { simulate } from '../helpers/simulate.js';

/**
 * The runner checks the ledger's path before every call and download (issue 12, point 5):
 * moved, replaced or deleted, the run halts at once (exit 2) and every photo stays
 * resumable. In process, under the virtual clock: the ledger is moved from inside the
 * transport, at a chosen call, so the calls after it can be counted exactly.
 */

const cleanups: (() => void)[] = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

/** A transport hook that runs `act` just before the n-th call goes out, and counts calls after it. */
function atCall(n: number, act: () => void) {
  const seen = { calls: 0, after: 0 };
  const intercept = (_req: WireRequest, forward: () => Promise<WireResponse>) => {
    seen.calls++;
    if (seen.calls === n) act();
    else if (seen.calls > n) seen.after++;
    return forward();
  };
  return { seen, intercept };
}

describe('a ledger moved during a simulated run', () => {
  it('halts at once: exit 2, the ledger halt, no call sent after it, nothing failed; moved back, the next run creates nothing twice', async () => {
    const job = await makeJob({ photos: 10, steps: [{ capability: 'enhance' }], baseUrl: 'http://sim.invalid' });
    cleanups.push(job.cleanup);
    const ledger = Ledger.open(job.ledgerFile);
    const movedTo = path.join(job.dir, 'moved.db');
    const { seen, intercept } = atCall(15, () => renameSync(job.ledgerFile, movedTo));

    const first = await simulate({ job, ledger, intercept, sim: { latency: { medianMs: 20_000, sigma: 0.3 } } });
    expect(first.result.exitCode).toBe(2);
    expect(first.result.halt).toEqual({
      kind: 'ledger',
      exitCode: 2,
      immediate: true,
      message: `the ledger ${job.ledgerFile} was moved to ${movedTo} during the run; nothing more was sent. Move it back, or run again with --ledger ${movedTo}`,
    });
    // The call that was going out when the file moved was already past its check; those in
    // flight then may still be answered; nothing new is sent.
    expect(seen.after).toBe(0);
    expect(first.result.status.failed).toBe(0);
    expect(first.result.status.held).toBe(0);
    expect(first.result.status.done).toBeLessThan(10);
    ledger.close();

    renameSync(movedTo, job.ledgerFile);
    const reopened = Ledger.open(job.ledgerFile);
    cleanups.push(() => reopened.close());
    const again = await simulate({ job, ledger: reopened, model: first.model, clock: first.clock });
    expect(again.result.exitCode).toBe(0);
    const creates = Object.values(again.model.audit().createsPerSource);
    expect(creates).toHaveLength(10);
    expect(creates.every((n) => n === 1)).toBe(true);
  });

  it('deleted: halts the same way, saying it was deleted', async () => {
    const job = await makeJob({ photos: 6, steps: [{ capability: 'enhance' }], baseUrl: 'http://sim.invalid' });
    cleanups.push(job.cleanup);
    const ledger = Ledger.open(job.ledgerFile);
    cleanups.push(() => ledger.close());
    const { seen, intercept } = atCall(8, () => unlinkSync(job.ledgerFile));
    const r = await simulate({ job, ledger, intercept, sim: { latency: { medianMs: 20_000, sigma: 0.3 } } });
    expect(r.result.exitCode).toBe(2);
    expect(r.result.halt?.message).toBe(`the ledger ${job.ledgerFile} was deleted during the run; nothing more was sent`);
    expect(seen.after).toBe(0);
  });

  it('an in-memory ledger has no path to check: a simulation runs to the end', async () => {
    const r = await simulate({ photos: 4, steps: [{ capability: 'enhance' }] });
    cleanups.push(r.job.cleanup);
    expect(r.result.exitCode).toBe(0);
  });
});
