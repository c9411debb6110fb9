import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fingerprintKey } from '../../src/spec/key.js';
import { startSim, type RunningSim } from '../../src/sim/server.js';
import { runCli } from '../helpers/cli.js';
import { makeJob, type TestJob } from '../helpers/job.js';

const KEY = 'account-test-key-61f0ab2d';
const FP = fingerprintKey(KEY);

describe('darkroom credits and darkroom usage', () => {
  let sim: RunningSim;
  let job: TestJob;
  const calls = () => sim.model.audit().keys[FP]?.calls ?? 0;

  beforeAll(async () => {
    sim = await startSim({ keys: [KEY], seed: 2, credits: 500 });
    job = await makeJob({ photos: 0, baseUrl: 'http://127.0.0.1:1' });
  });

  afterAll(async () => {
    await sim?.close();
    job?.cleanup();
  });

  it("credits --json: one call per key, the account's figures, the key by fingerprint only; no ledger created", async () => {
    const r = await runCli(['credits', job.jobsFile, '--base-url', sim.apiUrl, '--json'], { DARKROOM_TEST_KEY: KEY });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({
      keys: [{ key: FP, env: 'DARKROOM_TEST_KEY', totalCredit: 500, usedCredit: 0, remainingCredit: 500 }],
      calls: 1,
    });
    expect(calls()).toBe(1);
    expect(existsSync(job.ledgerFile)).toBe(false);
  });

  it('credits for people, from DARKROOM_API_KEY and DARKROOM_BASE_URL when no jobs file is named', async () => {
    const r = await runCli(['credits'], { DARKROOM_API_KEY: KEY, DARKROOM_BASE_URL: sim.apiUrl });
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(
      `credits  key ${FP} (DARKROOM_API_KEY): 500 remaining · 0 used · 500 in all\n` +
        `note     1 call(s) to GET /api/v1/credits, counted in the key's minute and hour windows\n`,
    );
    expect(calls()).toBe(2);
  });

  it("usage: the service's remaining windows, which already count this call (said so)", async () => {
    const before = calls();
    const r = await runCli(['usage', job.jobsFile, '--base-url', sim.apiUrl, '--json'], { DARKROOM_TEST_KEY: KEY });
    expect(r.code).toBe(0);
    const j = JSON.parse(r.stdout) as {
      keys: { key: string; apiKey: string; minuteRemaining: number; hourRemaining: number; ledger: unknown }[];
      calls: number;
    };
    expect(j.calls).toBe(1);
    expect(j.keys[0]!.key).toBe(FP);
    expect(j.keys[0]!.minuteRemaining).toBe(100 - (before + 1));
    expect(j.keys[0]!.hourRemaining).toBe(1000 - (before + 1));
    expect(j.keys[0]!.apiKey).not.toBe(KEY);
    expect(j.keys[0]!.ledger).toBeNull(); // no ledger yet
    const human = await runCli(['usage', job.jobsFile, '--base-url', sim.apiUrl], { DARKROOM_TEST_KEY: KEY });
    expect(human.stdout).toMatch(
      new RegExp(`^usage    key ${FP} \\(DARKROOM_TEST_KEY; the service shows it as \\S+\\) · account \\S+$`, 'm'),
    );
    expect(human.stdout).toMatch(/^ {9}9\d calls left this minute · 99\d left this hour/m);
    expect(human.stdout).toMatch(/^note     this was 1 call\(s\) to GET \/api\/v1\/usage: it counts against the key's windows/m);
    for (const out of [r.stdout, human.stdout, r.stderr, human.stderr]) expect(out).not.toContain(KEY);
  });

  it("records the call in the job's ledger when there is one (L3), beside the ledger's own count", async () => {
    // A run with no photos creates the ledger and makes no call.
    const run = await runCli(['run', job.jobsFile, '--base-url', sim.apiUrl], { DARKROOM_TEST_KEY: KEY });
    expect(run.code).toBe(0);
    expect(existsSync(job.ledgerFile)).toBe(true);
    const c = await runCli(['credits', job.jobsFile, '--base-url', sim.apiUrl], { DARKROOM_TEST_KEY: KEY });
    expect(c.code).toBe(0);
    const u = await runCli(['usage', job.jobsFile, '--base-url', sim.apiUrl, '--json'], { DARKROOM_TEST_KEY: KEY });
    const j = JSON.parse(u.stdout) as { keys: { ledger: { lastMinute: number; lastHour: number } }[] };
    expect(j.keys[0]!.ledger).toEqual({ lastMinute: 2, lastHour: 2 });
    const s = JSON.parse((await runCli(['status', job.jobsFile, '--json'])).stdout) as { calls: { total: number; account: number } };
    expect(s.calls).toMatchObject({ total: 2, account: 2 });
  });

  it('an invalid key is an account problem: exit 3, one line naming the variable, and no key in it', async () => {
    const bad = 'invalid-canary-key-0f9e8d7c';
    for (const cmd of ['credits', 'usage']) {
      const r = await runCli([cmd, job.jobsFile, '--base-url', sim.apiUrl], { DARKROOM_TEST_KEY: bad });
      expect(r.code, cmd).toBe(3);
      expect(r.stderr, cmd).toMatch(
        /^darkroom: the key is missing, invalid or inactive \(GET \/api\/v1\/(credits|usage), HTTP 401, .*set a valid key in DARKROOM_TEST_KEY\n$/,
      );
      expect(r.stdout + r.stderr, cmd).not.toContain(bad);
    }
  });

  it('no key set is a usage error (exit 2)', async () => {
    const r = await runCli(['credits'], { DARKROOM_BASE_URL: sim.apiUrl });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/DARKROOM_API_KEY: not set/);
    const r2 = await runCli(['usage', job.jobsFile], {});
    expect(r2.code).toBe(2);
    expect(r2.stderr).toMatch(/service\.apiKeyEnv: environment variable DARKROOM_TEST_KEY is not set/);
  });
});
