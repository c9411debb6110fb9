import { afterEach, describe, expect, it } from 'vitest';
import type { WireResponse } from '../../src/api/index.js';
import { accountStopLines } from '../../src/cli/commands/stops.js';
import { Ledger } from '../../src/ledger/index.js';
import { SimModel } from '../../src/sim/model.js';
import { startSim } from '../../src/sim/server.js';
import { runCli } from '../helpers/cli.js';
import { makeJob } from '../helpers/job.js';
import { simulate } from '../helpers/simulate.js';

/**
 * Issue 4, point 4: account problems stop the run with exit 3. 401 at once, nothing
 * retried; 24403 (in a 400 or a 200) at once; 20601 stops new creates only, finishes what
 * is in flight, and says how many credits the rest needs against what is left. The next
 * run continues where this one stopped.
 */

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

const json = (status: number, body: unknown): WireResponse => ({
  status,
  headers: { 'content-type': 'application/json' },
  body: Buffer.from(JSON.stringify(body)),
});

describe('an invalid or inactive key (401)', () => {
  it('stops the run at once, exit 3, nothing retried; a run with a valid key continues', async () => {
    const job = await makeJob({ photos: 6, steps: [{ capability: 'enhance' }] });
    const ledger = Ledger.open(job.ledgerFile);
    cleanups.push(job.cleanup, () => ledger.close());
    const stranger = new SimModel({ keys: ['not-the-key-we-send'], resultOrigin: 'http://results.invalid', processing: 'passthrough' });
    const r = await simulate({ job, ledger, model: stranger });
    expect(r.result.exitCode).toBe(3);
    expect(r.result.accountStop?.error.httpStatus).toBe(401);
    // The calls already in flight when the first 401 came back, and not one more.
    // (Less the run's first contact: one request without any key, serviceContact.ts.)
    const calls = r.audit.unauthorized - 1;
    expect(calls).toBeGreaterThanOrEqual(1);
    expect(calls).toBeLessThanOrEqual(4);
    expect(r.result.status.calls.total).toBe(calls);
    expect(new Set(ledger.items.all().map((i) => i.state))).toEqual(new Set(['queued']));
    expect(accountStopLines(r.result, ['DARKROOM_TEST_KEY'])[0]).toMatch(
      /^stopped: the key is invalid or inactive \(HTTP 401, requestId [^)]+\); nothing was retried\. Set a valid key in DARKROOM_TEST_KEY/,
    );

    const next = await simulate({ job, ledger });
    expect(next.result.exitCode).toBe(0);
    expect(next.result.status).toMatchObject({ total: 6, done: 6 });
  });

  it('at the command line: exit 3 and "the key is invalid or inactive"', async () => {
    const sim = await startSim({ keys: ['the-real-key-123456'], seed: 1, latency: { medianMs: 200, sigma: 0.1 } });
    const job = await makeJob({ photos: 2, steps: [{ capability: 'enhance' }] });
    cleanups.push(job.cleanup, () => sim.close());
    const r = await runCli(['run', job.jobsFile, '--base-url', sim.apiUrl], { DARKROOM_TEST_KEY: 'a-revoked-key-654321' });
    expect(r.code).toBe(3);
    expect(r.stdout + r.stderr).toMatch(/the key is invalid or inactive/);
    expect(r.stdout + r.stderr).not.toContain('a-revoked-key-654321');
  });
});

describe('an account without a subscription (24403)', () => {
  it('in an HTTP 400: stops, exit 3, the photo not held (no task was made)', async () => {
    const r = await simulate({ photos: 3, steps: [{ capability: 'enhance' }], sim: { subscribed: false } });
    cleanups.push(r.job.cleanup);
    expect(r.result.exitCode).toBe(3);
    expect(r.result.accountStop?.error).toMatchObject({ httpStatus: 400, businessCode: 24403 });
    expect(r.result.status.held).toBe(0);
    expect(r.audit.tasks).toBe(0);
    expect(accountStopLines(r.result, ['DARKROOM_TEST_KEY'])[0]).toMatch(
      /^stopped: the account is not subscribed, or its subscription has expired \(code 24403 in an HTTP 400/,
    );
  });

  it('in an HTTP 200 without a requestId (as the published examples show): the same stop', async () => {
    const sim = await startSim({
      keys: ['k-24403-in-200-xyz'],
      seed: 2,
      latency: { medianMs: 200, sigma: 0.1 },
      faults: { notSubscribed200: { probability: 1 } },
    });
    const job = await makeJob({ photos: 2, steps: [{ capability: 'enhance' }] });
    cleanups.push(job.cleanup, () => sim.close());
    const r = await runCli(['run', job.jobsFile, '--base-url', sim.apiUrl], { DARKROOM_TEST_KEY: 'k-24403-in-200-xyz' });
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/stopped: the account is not subscribed, or its subscription has expired \(code 24403 in an HTTP 200\)/);
    const s = JSON.parse((await runCli(['status', job.jobsFile, '--json'])).stdout);
    expect(s).toMatchObject({ total: 2, held: 0, done: 0 });
    expect(sim.model.audit().tasks).toBe(0);
  });
});

describe('insufficient credits (20601)', () => {
  it('stops new creates, finishes what is in flight, reports credits needed against remaining; the next run continues', async () => {
    const job = await makeJob({ photos: 6, steps: [{ capability: 'enhance' }] });
    const ledger = Ledger.open(job.ledgerFile);
    cleanups.push(job.cleanup, () => ledger.close());
    let accepted = 0;
    let creditCalls = 0;
    let broke = true;
    const account = async (req: { url: string; headers: Record<string, string> }, forward: () => Promise<WireResponse>) => {
      // The keyed ones: the run's first contact asks without a key (serviceContact.ts) and the
      // service refuses it (401), which is what shows it is the API.
      if (req.url.endsWith('/api/v1/credits') && req.headers['x-api-key'] !== undefined) {
        creditCalls++;
        return json(200, { code: 0, message: 'ok', requestId: 'srv-credits', data: { totalCredit: 2, usedCredit: 2, remainingCredit: 0 } });
      }
      if (broke && req.url.endsWith('/generate') && accepted >= 2) {
        return json(400, { code: 20601, message: 'insufficient credits', requestId: 'srv-20601' });
      }
      const res = await forward();
      if (req.url.endsWith('/generate') && res.status === 200) accepted++;
      return res;
    };
    const r = await simulate({ job, ledger, intercept: account, sim: { latency: { medianMs: 30_000, sigma: 0.2 } } });
    expect(r.result.exitCode).toBe(3);
    // The two tasks already made were polled to the end and downloaded.
    expect(r.result.status).toMatchObject({ total: 6, done: 2, held: 0, failed: 0 });
    expect(r.result.credits).toEqual({ needed: 4, remaining: 0 });
    expect(creditCalls).toBe(1);
    expect(accountStopLines(r.result, ['DARKROOM_TEST_KEY'])[0]).toMatch(
      /^stopped: out of credits \(code 20601, requestId srv-20601\): the photos left need 4 more create\(s\) \(at least 4 credit\(s\)\); the account has 0 credit\(s\) remaining/,
    );

    broke = false; // credits bought
    const next = await simulate({ job, ledger, model: r.model, clock: r.clock, intercept: account });
    expect(next.result.exitCode).toBe(0);
    expect(next.result.status).toMatchObject({ total: 6, done: 6 });
    expect(Object.values(next.audit.createsPerSource)).toEqual([1, 1, 1, 1, 1, 1]);
  });
});
