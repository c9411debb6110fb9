import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { fingerprintKey } from '../../src/spec/key.js';
import { startSim, type RunningSim } from '../../src/sim/server.js';
import { runCli } from '../helpers/cli.js';
import { listenLocal, type LocalServer } from '../helpers/http.js';
import { makeJob, setSteps, type TestJob } from '../helpers/job.js';

/**
 * Issue 12, points 6 and 7, through the real CLI against the HTTP simulator: what the
 * operator reads and the exit codes.
 */

const KEY = 'e2e-steps-key-5b1e0c9d7a';
const env = { DARKROOM_TEST_KEY: KEY };
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function setup(
  faults?: Parameters<typeof startSim>[0]['faults'],
  photos = 3,
  steps: unknown[] = [{ capability: 'upscale', resolution: '4K' }],
): Promise<{ sim: RunningSim; job: TestJob }> {
  const sim = await startSim({ keys: [KEY], seed: 9, latency: { medianMs: 200, sigma: 0.3 }, ...(faults ? { faults } : {}) });
  const job = await makeJob({ photos, steps, extra: { output: { dir: './out', sidecar: true } } });
  cleanups.push(() => sim.close(), job.cleanup);
  return { sim, job };
}

const calls = (sim: RunningSim) => sim.model.audit().keys[fingerprintKey(KEY)]!.calls;

describe("darkroom run after the job's steps changed", () => {
  it('refuses with exit 2 before any call, saying what changed and what a redo costs; plan shows it; --redo-steps redoes', async () => {
    const { sim, job } = await setup(undefined, 3, [
      { capability: 'upscale', resolution: '4K' },
      { capability: 'enhance', mode: 'general' },
    ]);
    const first = await runCli(['run', job.jobsFile, '--base-url', sim.apiUrl, '--quiet'], env);
    expect(first.code).toBe(0);
    setSteps(job, [{ capability: 'upscale', resolution: '4K' }]);

    const before = calls(sim);
    const refused = await runCli(['run', job.jobsFile, '--base-url', sim.apiUrl, '--quiet'], env);
    expect(refused.code).toBe(2);
    expect(calls(sim)).toBe(before);
    expect(refused.stderr).not.toMatch(/unexpected error|Cannot read/);
    expect(refused.stderr).toMatch(
      /^stopped: the job's steps changed: 3 photo\(s\) were started under other steps \(3 done\).*nothing was sent.*--redo-steps/m,
    );
    expect(refused.stderr).toMatch(/^steps    old: upscale \(resolution 4K\) → enhance \(mode general\): 3 done/m);
    expect(refused.stderr).toMatch(/^steps    new: upscale \(resolution 4K\)$/m);
    expect(refused.stderr).toMatch(
      /^redo     a redo: 3 photo\(s\) from the first step: at least 3 create\(s\) and 6 call\(s\), credits unknown/m,
    );

    const plan = await runCli(['plan', job.jobsFile, '--cost', 'upscale=2'], {});
    expect(plan.code).toBe(0);
    expect(plan.stdout).toMatch(/^changed  the job's steps changed since 3 photo\(s\) were started under other steps/m);
    expect(plan.stdout).toMatch(
      /^redo     a redo: 3 photo\(s\) from the first step: at least 3 create\(s\) and 6 call\(s\), 6 credit\(s\)/m,
    );
    expect(plan.stdout).toMatch(/^credits  6 needed/m);
    expect(calls(sim)).toBe(before);

    const redo = await runCli(['run', job.jobsFile, '--base-url', sim.apiUrl, '--quiet', '--redo-steps'], env);
    expect(redo.code).toBe(0);
    expect(redo.stdout).toMatch(/^redo     redone: 3 photo\(s\)/m);
    for (const rel of job.sizes.keys()) {
      const out = path.join(job.outputDir, rel.replace(/\.[a-z]+$/, '.jpg'));
      const sidecar = JSON.parse(readFileSync(`${out}.json`, 'utf8')) as { steps: { capability: string }[] };
      expect(
        sidecar.steps.map((s) => s.capability),
        rel,
      ).toEqual(['upscale']);
    }
  }, 120_000);
});

describe('a base URL that redirects', () => {
  let target: LocalServer;
  const seen: { url: string; key: boolean }[] = [];
  afterEach(async () => {
    await target?.close();
    seen.length = 0;
  });
  async function elsewhere(): Promise<string> {
    target = await listenLocal((req, res) => {
      seen.push({ url: req.url ?? '', key: req.headers['x-api-key'] !== undefined });
      res.end('{"code":0,"data":{}}');
    });
    return target.origin;
  }

  it('stops the run with exit 2 naming the target; every photo pending, none failed; nothing reaches the other origin', async () => {
    const to = await elsewhere();
    const { sim, job } = await setup({ redirect: { to, status: 308 } }, 4);
    const r = await runCli(['run', job.jobsFile, '--base-url', sim.apiUrl, '--quiet'], env);
    expect(r.code).toBe(2);
    // The first call to meet the redirect names it: the first upload, or the usage reading
    // that goes beside it (which one leaves first is the machine's timing).
    const line = r.stderr.split('\n').find((l) => l.startsWith('stopped: the base URL redirects to')) ?? r.stderr;
    expect([
      `stopped: the base URL redirects to ${to}/api/v1/image/upload (POST /api/v1/image/upload, HTTP 308`,
      `stopped: the base URL redirects to ${to}/api/v1/usage (GET /api/v1/usage, HTTP 308`,
    ]).toContain(line.slice(0, line.indexOf(', HTTP 308') + ', HTTP 308'.length));
    expect(r.stderr).toMatch(/set service\.baseUrl to the final URL/);
    expect(r.stdout + r.stderr).not.toContain(KEY);
    const s = await runCli(['status', job.jobsFile, '--json']);
    expect(JSON.parse(s.stdout)).toMatchObject({ total: 4, done: 0, failed: 0, held: 0, pending: 4 });
    expect(seen).toEqual([]);

    const credits = await runCli(['credits', job.jobsFile, '--base-url', sim.apiUrl], env);
    expect(credits.code).toBe(2);
    expect(credits.stderr).toContain(`darkroom: the base URL redirects to ${to}/api/v1/credits (GET /api/v1/credits, HTTP 308`);
    const plan = await runCli(['plan', job.jobsFile, '--base-url', sim.apiUrl], env);
    expect(plan.code).toBe(2);
    expect(plan.stderr).toContain(`darkroom: the base URL redirects to ${to}/api/v1/credits`);
    expect(seen).toEqual([]);
  }, 120_000);

  it('one 307 on the first upload stops the run (exit 2); a rerun with the redirect gone finishes', async () => {
    const to = await elsewhere();
    const { sim, job } = await setup({ redirect: { to, calls: 'upload', times: 1 } }, 3);
    const r1 = await runCli(['run', job.jobsFile, '--base-url', sim.apiUrl, '--quiet'], env);
    expect(r1.code).toBe(2);
    expect(r1.stderr).toMatch(/stopped: the base URL redirects to .*HTTP 307/);
    expect(r1.stdout).toMatch(/· 0 failed · 0 held ·/);
    const r2 = await runCli(['run', job.jobsFile, '--base-url', sim.apiUrl, '--quiet'], env);
    expect(r2.code).toBe(0);
    expect(r2.stdout).toMatch(/3 total · 3 done · 0 failed · 0 held · 0 pending/);
    expect(Object.values(sim.model.audit().createsPerSource)).toEqual([1, 1, 1]);
    expect(seen).toEqual([]);
    expect(existsSync(job.outputDir)).toBe(true);
  }, 120_000);
});
