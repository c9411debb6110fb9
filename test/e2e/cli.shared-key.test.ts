import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { fingerprintKey } from '../../src/spec/key.js';
import { KeyStore } from '../../src/keystore/store.js';
import { startSim, type RunningSim } from '../../src/sim/server.js';
import { runCli } from '../helpers/cli.js';
import { makeJob, type TestJob } from '../helpers/job.js';

/**
 * Issue 12, point 4: one budget per key, machine-wide. Every darkroom process using a key
 * on this machine — runs of different ledgers, `usage`, `credits` — shares one rolling
 * window and one slot count, through the key's store in DARKROOM_STATE_DIR.
 */

const KEY = 'shared-key-test-4c7e19a2b8';
const FP = fingerprintKey(KEY);
const LIMITS = { callsPerMinute: 30, callsPerHour: 1000, activeTasks: 3 };

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

function tempDir(): string {
  const d = mkdtempSync(path.join(tmpdir(), 'darkroom-shared-key-'));
  cleanups.push(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

describe('two jobs with the same key, on two ledgers', () => {
  let sim: RunningSim;
  const jobs: TestJob[] = [];
  afterAll(async () => {
    await sim?.close();
    for (const j of jobs) j.cleanup();
  });

  it("never exceed the key's window nor its slots together, with `usage` and `credits` run beside them", async () => {
    sim = await startSim({ keys: [KEY], seed: 31, latency: { medianMs: 1500, sigma: 0.3 }, limits: LIMITS });
    for (let i = 0; i < 2; i++) jobs.push(await makeJob({ photos: 6, steps: [{ capability: 'enhance' }], extra: { limits: LIMITS } }));
    const env = { DARKROOM_TEST_KEY: KEY, DARKROOM_STATE_DIR: path.join(tempDir(), 'state') };
    const runs = jobs.map((j) => runCli(['run', j.jobsFile, '--base-url', sim.apiUrl, '--quiet'], env, { timeoutMs: 300_000 }));
    // Account calls beside them, once the runs are under way.
    await new Promise((r) => setTimeout(r, 3000));
    const account = await Promise.all([
      runCli(['usage', jobs[0]!.jobsFile, '--base-url', sim.apiUrl], env, { timeoutMs: 120_000 }),
      runCli(['credits', jobs[1]!.jobsFile, '--base-url', sim.apiUrl], env, { timeoutMs: 120_000 }),
    ]);
    const [a, b] = await Promise.all(runs);
    for (const r of [a!, b!]) {
      expect(r.stderr).not.toMatch(/unexpected error/);
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(/6 total · 6 done/);
    }
    for (const r of account) {
      expect(r.code, r.stderr).toBe(0);
      // Said at most once, if the window had no room.
      expect(r.stderr.match(/waiting/g)?.length ?? 0).toBeLessThanOrEqual(1);
    }
    const k = sim.model.audit().keys[FP]!;
    // Two processes' worth of work: more calls than one minute allows, so the window bound.
    expect(k.calls).toBeGreaterThan(LIMITS.callsPerMinute);
    expect(k.maxCallsInAnyMinute).toBeLessThanOrEqual(LIMITS.callsPerMinute);
    expect(k.maxActiveTasks).toBeLessThanOrEqual(LIMITS.activeTasks);
    expect(k.rejected429, JSON.stringify(k.rejectedByScope)).toBe(0);
    expect(k.creates).toBe(12);
  }, 300_000);
});

describe("an account command when another process has used the key's windows", () => {
  /** What other darkroom processes spent on the key: calls recorded in its store `agoMs` ago. */
  function spent(stateDir: string, n: number, agoMs: number): void {
    const store = KeyStore.openFor(stateDir, FP);
    try {
      const at = Date.now() - agoMs;
      for (let i = 0; i < n; i++) store.insertCall('another-process', at, 'poll');
    } finally {
      store.close();
    }
  }

  it('waits for room in the minute window, says so once, then makes its call', async () => {
    const sim = await startSim({ keys: [KEY], seed: 32 });
    cleanups.push(() => sim.close());
    const stateDir = path.join(tempDir(), 'state');
    spent(stateDir, 100, 52_000); // the minute's 100 calls, leaving it in ~9 s
    const t0 = Date.now();
    const r = await runCli(['usage', '--json'], { DARKROOM_API_KEY: KEY, DARKROOM_BASE_URL: sim.apiUrl, DARKROOM_STATE_DIR: stateDir });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/^darkroom: waiting \d+ s for room in the key's minute window \(another darkroom process is using it\)\n$/);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(7_000);
    expect(sim.model.audit().keys[FP]!.calls).toBe(1);
  });

  it('refuses with one line saying when, exit 2, when the hour window binds', async () => {
    const sim = await startSim({ keys: [KEY], seed: 33 });
    cleanups.push(() => sim.close());
    const stateDir = path.join(tempDir(), 'state');
    spent(stateDir, 1000, 10 * 60_000); // the hour's 1,000 calls, ten minutes ago
    const r = await runCli(['credits'], { DARKROOM_API_KEY: KEY, DARKROOM_BASE_URL: sim.apiUrl, DARKROOM_STATE_DIR: stateDir });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(
      /^darkroom: the key's hour window is full \(other darkroom processes, or other clients of the key, are using it\): the next call is possible at \d\d:\d\d:\d\d \(in 5\d min\); try again then\n$/,
    );
    expect(r.stdout).toBe('');
    expect(sim.model.audit().keys[FP]!.calls).toBe(0);
  });
});

describe('a key store that cannot be written', () => {
  it('stops the run before any call with one line naming the folder to fix, exit 2', async () => {
    const sim = await startSim({ keys: [KEY], seed: 34 });
    cleanups.push(() => sim.close());
    const job = await makeJob({ photos: 2, steps: [{ capability: 'enhance' }] });
    cleanups.push(job.cleanup);
    // Unwritable for root and users alike (the tests may run as root: mode bits would not do).
    const r = await runCli(['run', job.jobsFile, '--base-url', sim.apiUrl, '--quiet'], {
      DARKROOM_TEST_KEY: KEY,
      DARKROOM_STATE_DIR: '/sys/kernel/darkroom-state',
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(
      /^darkroom: cannot open the key's shared call budget at \/sys\/kernel\/darkroom-state\/k_[0-9a-f]{12}\.db \(EPERM\); set DARKROOM_STATE_DIR to a writable folder\n$/,
    );
    expect(r.stdout + r.stderr).not.toContain(KEY);
    expect(sim.model.audit().keys[FP]!.calls).toBe(0);
  });
});
