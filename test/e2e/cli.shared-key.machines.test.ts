import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { fingerprintKey } from '../../src/spec/key.js';
import { startSim, type RunningSim } from '../../src/sim/server.js';
import { runCli } from '../helpers/cli.js';
import { makeJob, makeTempDir, type TestJob } from '../helpers/job.js';
import { look } from '../helpers/ledger.js';

/**
 * One key on two machines: two runs with the same key and a state folder each, as two
 * workstations have (their key stores know nothing of each other; only the service can
 * tell each of the other, by GET /usage and its 429s), 15 photos each, the key allowed 40
 * calls a minute. The simulator counts refused calls in the key's windows, as the spec
 * does, so two clients that keep retrying at their own full rates starve each other (87% of
 * all calls refused, neither run finished in 400 s, before the key was shared).
 *
 * Held: both finish every photo with one create each; at most 10% of all calls are
 * refused; the key's minute window is at least 70% used while both run (answered calls a
 * minute of the 40 it allows). The figures are printed for docs/guide/troubleshooting.md § The key's limits.
 * Three minutes of real time: `npm run test:machines`; `npm test` holds the same figures
 * in simulation (test/run/sharedKey.simulation.test.ts).
 */

const KEY = 'two-machines-key-7d1e40b2c9';
const FP = fingerprintKey(KEY);
const LIMITS = { callsPerMinute: 40, callsPerHour: 1000, activeTasks: 3 };
const PHOTOS = 15;

describe('one key on two machines (a state folder each)', () => {
  let sim: RunningSim;
  const jobs: TestJob[] = [];
  const dirs: string[] = [];
  afterAll(async () => {
    await sim?.close();
    for (const j of jobs) j.cleanup();
  });

  it(`both finish their ${PHOTOS} photos with one create each, ≤ 10% of calls refused, the window ≥ 70% used while both run`, async () => {
    sim = await startSim({ keys: [KEY], seed: 23, latency: { medianMs: 3000, sigma: 0.3 }, limits: LIMITS });
    // Every call the service answered, when and how: the figures below are read from it.
    const answers: { atMs: number; status: number; scope: string | undefined }[] = [];
    const handle = sim.model.handleApi.bind(sim.model);
    sim.model.handleApi = async (req) => {
      const res = await handle(req);
      if (req.headers['x-api-key'] === KEY) answers.push({ atMs: Date.now(), status: res.status, scope: res.headers['ratelimit-scope'] });
      return res;
    };
    for (let m = 0; m < 2; m++) {
      // Other photos on each machine, so every source is created once.
      jobs.push(await makeJob({ photos: PHOTOS, photoOffset: 100 * m, steps: [{ capability: 'enhance' }], extra: { limits: LIMITS } }));
      dirs.push(path.join(makeTempDir('darkroom-machine-'), 'state'));
    }
    const t0 = Date.now();
    const ends: number[] = [];
    const runs = jobs.map((j, m) =>
      runCli(
        ['run', j.jobsFile, '--base-url', sim.apiUrl, '--quiet'],
        { DARKROOM_TEST_KEY: KEY, DARKROOM_STATE_DIR: dirs[m]! },
        { timeoutMs: 600_000 },
      ).then((r) => {
        ends[m] = Date.now();
        return r;
      }),
    );
    const results = await Promise.all(runs);
    for (const r of results) {
      expect(r.stderr).not.toMatch(/unexpected error/);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toMatch(new RegExp(`${PHOTOS} total · ${PHOTOS} done`));
    }
    // One create each: every source once, and each ledger's creates all accepted, one a photo.
    const audit = sim.model.audit();
    expect(Object.values(audit.createsPerSource)).toEqual(Array.from({ length: 2 * PHOTOS }, () => 1));
    for (const j of jobs) {
      expect(look<{ n: number }>(j.ledgerFile, "SELECT COUNT(*) AS n FROM submissions WHERE state = 'accepted'")[0]!.n).toBe(PHOTOS);
    }
    const k = audit.keys[FP]!;
    const refused = k.rejected429 / k.calls;
    // While both run: answered calls a minute ÷ the key's 40 (the window starts empty, so a
    // short overlap can pass 100%).
    const both = Math.min(...ends);
    const answered = answers.filter((a) => a.status !== 429 && a.atMs <= both).length;
    const used = answered / (((both - t0) / 60_000) * LIMITS.callsPerMinute);
    // Never a burst when the window frees while the key is shared: the most calls of the two in
    // any 2 s from when the key was first found full until one machine ended. Once one has
    // ended, the other takes the whole key back (it spends its windows whole, as a key alone
    // does); that phase is printed, not held to the shared rule.
    const full = answers.find((a) => a.status === 429 && a.scope === 'api_key_minute')?.atMs ?? Infinity;
    const mostIn2s = (times: number[]) => {
      let most = 0;
      for (let i = 0, j = 0; i < times.length; i++) {
        while (j < times.length && times[j]! - times[i]! < 2000) j++;
        most = Math.max(most, j - i);
      }
      return most;
    };
    const burst = mostIn2s(answers.filter((a) => a.atMs >= full && a.atMs <= both).map((a) => a.atMs));
    const aloneBurst = mostIn2s(answers.filter((a) => a.atMs > both).map((a) => a.atMs));
    console.log(
      `two machines, one key of ${LIMITS.callsPerMinute}/min, ${PHOTOS} photos each: ${k.calls} calls, ${k.rejected429} refused (${(100 * refused).toFixed(1)}%: ` +
        `${JSON.stringify(k.rejectedByScope)}); ends at ${ends.map((e) => ((e - t0) / 1000).toFixed(0)).join(' s and ')} s; ` +
        `${answered} answered while both ran (${((both - t0) / 1000).toFixed(0)} s): the window ${(100 * used).toFixed(0)}% used; at most ${burst} calls in any 2 s once the window was full while both ran, ${aloneBurst} after one ended`,
    );
    expect(refused).toBeLessThanOrEqual(0.1);
    expect(used).toBeGreaterThanOrEqual(0.7);
    expect(burst).toBeLessThanOrEqual(6);
    expect(k.maxActiveTasks).toBeLessThanOrEqual(LIMITS.activeTasks);
  }, 600_000);
});
