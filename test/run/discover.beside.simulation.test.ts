import { afterEach, describe, expect, it } from 'vitest';
import type { WireRequest, WireResponse } from '../../src/api/index.js';
import { Ledger } from '../../src/ledger/index.js';
import { makeJob } from '../helpers/job.js';
import { simSession, simulate } from '../helpers/simulate.js';

/**
 * The run's discovery goes on beside the work (docs/ARCHITECTURE.md § Flow): a large folder's
 * photos are recorded a batch at a time, and the lanes start on the first batch rather than
 * wait for the whole walk. Seen in the ledger at the moment the first create leaves: fewer
 * photos recorded than the folder holds, and the discovery's generation not completed yet.
 */

const cleanups: (() => void)[] = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

/** Four of discovery's batches (16, 32, 64, then the rest). */
const PHOTOS = 200;

/** What the ledger holds when the first create of a run leaves. */
function watchFirstCreate(ledger: Ledger) {
  const seen: { items?: number; complete?: number } = {};
  const intercept = async (req: WireRequest, forward: () => Promise<WireResponse>) => {
    if (req.url.endsWith('/generate') && seen.items === undefined) {
      seen.items = ledger.items.all().length;
      // The latest complete discovery (0 before the first ever completes).
      seen.complete = ledger.inputs.generation();
    }
    return forward();
  };
  return { seen, intercept };
}

describe('a run over a large folder', () => {
  it('sends its first create before its discovery has finished, on a first run and on a resume; every photo done once', async () => {
    const job = await makeJob({ photos: PHOTOS, steps: [{ capability: 'enhance' }], baseUrl: 'http://sim.invalid' });
    cleanups.push(job.cleanup);
    const ledger = Ledger.open(':memory:');
    cleanups.push(() => ledger.close());
    const session = simSession({ job, ledger });

    // A first run, stopped at its first create: the folder was not all recorded yet.
    const stop = new AbortController();
    const first = watchFirstCreate(ledger);
    const r1 = await simulate({
      ...session,
      signal: stop.signal,
      intercept: async (req, forward) => {
        const res = await first.intercept(req, forward);
        if (req.url.endsWith('/generate')) stop.abort();
        return res;
      },
    });
    expect(r1.result.exitCode).toBe(130);
    expect(first.seen.items).toBeGreaterThan(0);
    expect(first.seen.items).toBeLessThan(PHOTOS);
    expect(first.seen.complete).toBe(0);
    // Stopped half way, the discovery marks nothing gone; the next run looks again.
    expect(r1.result.status.gone).toBe(0);

    // The resume starts on the photos recorded before while its own discovery walks the folder again.
    const again = watchFirstCreate(ledger);
    const r2 = await simulate({ ...session, intercept: again.intercept });
    expect(again.seen.complete).toBe(0);
    expect(r2.result.exitCode).toBe(0);
    expect(r2.result.status).toMatchObject({ total: PHOTOS, done: PHOTOS, pending: 0, gone: 0, skipped: 0 });
    expect(ledger.inputs.generation()).toBeGreaterThan(0);
    // One create a photo over both runs, within the key's limits.
    const audit = r2.audit;
    expect(Object.values(audit.createsPerSource)).toHaveLength(PHOTOS);
    expect(Object.values(audit.createsPerSource).every((n) => n === 1)).toBe(true);
    const key = Object.values(audit.keys)[0]!;
    expect(key.maxCallsInAnyMinute).toBeLessThanOrEqual(100);
    expect(key.maxCallsInAnyHour).toBeLessThanOrEqual(1000);
    expect(key.maxActiveTasks).toBeLessThanOrEqual(3);
  }, 120_000);
});
