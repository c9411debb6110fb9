import { afterEach, describe, expect, it } from 'vitest';
import { Ledger } from '../../../src/ledger/index.js';
import { makeJob } from '../../helpers/job.js';
import { simulate } from '../../helpers/simulate.js';
import { look as query } from '../../helpers/ledger.js';

/**
 * Issue 12, point 7: a base URL that redirects is a config problem, not the photos'. The
 * run stops at once with exit 2 and a line naming the target; every photo stays where it
 * was (pending), none failed; the key never goes to the other origin (the client never
 * follows: here the target does not even exist). With the redirect gone, a rerun finishes.
 */

const cleanups: (() => void)[] = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

async function job(photos: number, steps: unknown[] = [{ capability: 'enhance' }]) {
  const j = await makeJob({ photos, steps });
  const ledger = Ledger.open(j.ledgerFile);
  cleanups.push(j.cleanup, () => ledger.close());
  return { job: j, ledger };
}

describe('a redirecting base URL', () => {
  it('on every call: exit 2 at once, the line naming the target, every photo still pending, none failed', async () => {
    const { job: j, ledger } = await job(5);
    const r = await simulate({ job: j, ledger, sim: { faults: { redirect: { to: 'https://api.moved.example/v2', status: 301 } } } });
    expect(r.result.exitCode).toBe(2);
    expect(r.result.halt).toMatchObject({ kind: 'config', exitCode: 2, immediate: true });
    expect(r.result.halt!.message).toMatch(
      // the run's first call, the GET /api/v1/usage that seeds the key's windows (src/run/keys.ts)
      /^the base URL redirects to https:\/\/api\.moved\.example\/v2\/api\/v1\/usage \(GET \/api\/v1\/usage, HTTP 301.*\): set service\.baseUrl to the final URL/,
    );
    expect(r.result.status).toMatchObject({ total: 5, done: 0, failed: 0, held: 0, pending: 5 });
    expect(r.result.status.states.queued).toBe(5);
    const k = Object.values(r.audit.keys)[0]!;
    // the calls already in flight when the first redirect came back, and nothing after
    expect(k.calls).toBe(k.redirected);
    expect(k.calls).toBeLessThanOrEqual(4);
    expect(query(j.ledgerFile, 'SELECT retries FROM items WHERE retries > 0')).toEqual([]);
  });

  it('one 307 on the first upload stops the run (exit 2); a rerun with the redirect gone finishes, one create a photo', async () => {
    const { job: j, ledger } = await job(4);
    const r1 = await simulate({
      job: j,
      ledger,
      sim: { faults: { redirect: { to: 'https://elsewhere.example', calls: 'upload', times: 1 } } },
    });
    expect(r1.result.exitCode).toBe(2);
    expect(r1.result.halt!.message).toMatch(/the base URL redirects to https:\/\/elsewhere\.example\/api\/v1\/image\/upload \(.*HTTP 307/);
    expect(r1.result.status).toMatchObject({ failed: 0, held: 0 });
    expect(r1.result.status.done).toBe(0);
    const r2 = await simulate({ job: j, ledger, model: r1.model, clock: r1.clock });
    expect(r2.result.exitCode).toBe(0);
    expect(r2.result.status).toMatchObject({ total: 4, done: 4, failed: 0 });
    expect(Object.values(r2.audit.createsPerSource)).toEqual([1, 1, 1, 1]);
  });

  it('on a create: not created, the photo back to wait for it; on a poll: the task kept and polled again by the rerun', async () => {
    for (const calls of ['create', 'poll'] as const) {
      const { job: j, ledger } = await job(3);
      const r1 = await simulate({ job: j, ledger, sim: { faults: { redirect: { to: 'https://elsewhere.example', calls, times: 1 } } } });
      expect(r1.result.exitCode, calls).toBe(2);
      expect(r1.result.status.failed, calls).toBe(0);
      expect(r1.result.status.held, calls).toBe(0);
      if (calls === 'create') {
        expect(query(j.ledgerFile, 'SELECT state, code FROM submissions WHERE http_status = 307'), calls).toEqual([
          { state: 'rejected', code: null },
        ]);
      }
      const r2 = await simulate({ job: j, ledger, model: r1.model, clock: r1.clock });
      expect(r2.result.exitCode, calls).toBe(0);
      expect(Object.values(r2.audit.createsPerSource), calls).toEqual([1, 1, 1]);
    }
  });
});
