import { afterEach, describe, expect, it } from 'vitest';
import { installClock } from '../../src/clock.js';
import { Ledger } from '../../src/ledger/index.js';
import { makeJob } from '../helpers/job.js';
import { simulate } from '../helpers/simulate.js';
import { createsPerPhoto } from './helpers.js';
import { look as query } from '../helpers/ledger.js';

/**
 * Issue 4, "done when": a run under the hostile profile (every fault of point 8 at once)
 * completes with no photo lost — in-process, under the virtual clock, so the night's 503
 * bursts and 35 s answers take no real time. Held photos are released as an operator
 * would (`retry --held`), and the audit's creates match what the ledger recorded.
 */

const cleanups: (() => void)[] = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

describe('the hostile profile', () => {
  it.each([3, 8])(
    'seed %i: every photo done in the end, every second create on record',
    async (seed) => {
      const job = await makeJob({ photos: 40, steps: [{ capability: 'enhance' }] });
      const ledger = Ledger.open(job.ledgerFile);
      cleanups.push(job.cleanup, () => ledger.close());
      let r = await simulate({ job, ledger, seed, sim: { faults: 'hostile', latency: { medianMs: 15_000, sigma: 0.5 } } });
      const { model, clock } = r;
      let heldSeen = 0;
      for (let round = 0; round < 10; round++) {
        const s = r.result.status;
        expect(s.failed, JSON.stringify(s.problems)).toBe(0);
        if (s.pending === 0 && s.held === 0) break;
        heldSeen += s.held;
        if (s.held > 0) {
          const restore = installClock(clock);
          ledger.held.requeue(['ambiguous', 'timeout'], 'retry --held (test)');
          restore();
        }
        r = await simulate({ job, ledger, model, clock, seed });
      }
      expect(r.result.status).toMatchObject({ total: 40, done: 40, failed: 0, held: 0, pending: 0 });
      const audit = model.audit();
      // The profile did its worst.
      for (const f of [
        'spurious429',
        'droppedCreate',
        'slowAnswer',
        'malformedJson',
        'expiredResultUrl',
        'truncatedDownload',
        'vanishedTask',
      ] as const) {
        expect(audit.faults[f], f).toBeGreaterThan(0);
      }
      expect(heldSeen).toBeGreaterThan(0);
      const facts = new Map(
        query<{ path: string; accepted: number; ambiguous: number; expired: number }>(
          job.ledgerFile,
          `SELECT i.rel_path AS path,
                (SELECT COUNT(*) FROM submissions s WHERE s.item_id = i.id AND s.state = 'accepted') AS accepted,
                (SELECT COUNT(*) FROM submissions s WHERE s.item_id = i.id AND s.state = 'ambiguous') AS ambiguous,
                (SELECT COUNT(*) FROM attempts a WHERE a.item_id = i.id AND a.status = 'EXPIRED') AS expired
         FROM items i`,
        ).map((f) => [f.path, f]),
      );
      const creates = createsPerPhoto(job, job.sizes.keys(), audit.createsPerSource);
      for (const [rel, n] of Object.entries(creates)) {
        const f = facts.get(rel)!;
        expect(n, rel).toBeGreaterThanOrEqual(1);
        expect(n, rel).toBeLessThanOrEqual(f.accepted + f.ambiguous);
        if (n > 1) expect(f.ambiguous + f.expired, rel).toBeGreaterThan(0);
      }
      // Within the limits by the simulator's own count, whatever it threw.
      const k = Object.values(audit.keys)[0]!;
      expect(k.maxCallsInAnyMinute).toBeLessThanOrEqual(100);
      expect(k.maxCallsInAnyHour).toBeLessThanOrEqual(1000);
      expect(k.maxActiveTasks).toBeLessThanOrEqual(3);
    },
    60_000,
  );
});
