import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSim, type RunningSim } from '../../src/sim/server.js';
import { fingerprintKey } from '../../src/spec/key.js';
import { runCli } from '../helpers/cli.js';
import { makeJob } from '../helpers/job.js';

const KEY = 'e2e-canary-key-7f3a9c2b1d';

describe('darkroom run, end to end over loopback HTTP', () => {
  let sim: RunningSim;
  let job: Awaited<ReturnType<typeof makeJob>>;
  let first: Awaited<ReturnType<typeof runCli>>;

  beforeAll(async () => {
    sim = await startSim({ keys: [KEY], seed: 3, latency: { medianMs: 300, sigma: 0.4 } });
    job = await makeJob({ photos: 24, steps: [{ capability: 'upscale', resolution: '4K', mode: 'general' }] });
    first = await runCli(['run', job.jobsFile, '--base-url', sim.apiUrl], { DARKROOM_TEST_KEY: KEY });
  }, 120_000);

  afterAll(async () => {
    await sim?.close();
    job?.cleanup();
  });

  it('exits 0 and reports every photo done', () => {
    expect(first.stderr).not.toMatch(/unexpected error/);
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/24 total · 24 done · 0 failed · 0 held · 0 pending/);
  });

  it('writes one output per input, mirroring the tree, each really upscaled', async () => {
    for (const [rel, size] of job.sizes) {
      const base = path.join(job.outputDir, rel.replace(/\.[a-z]+$/, ''));
      const matches = readdirSync(path.dirname(base)).filter((f) => f.startsWith(path.basename(base) + '.') && !f.startsWith('.'));
      expect(matches, rel).toHaveLength(1);
      const meta = await sharp(path.join(path.dirname(base), matches[0]!)).metadata();
      expect(meta.width, rel).toBe(size.width * 2);
      expect(meta.height, rel).toBe(size.height * 2);
    }
    const all = readdirSync(job.outputDir, { recursive: true }).map(String);
    expect(all.filter((f) => f.endsWith('.darkroom-tmp'))).toEqual([]);
  });

  it("stays inside the limits by the simulator's own audit, with exactly one create per photo", () => {
    const audit = sim.model.audit();
    const k = audit.keys[fingerprintKey(KEY)]!;
    expect(k.maxCallsInAnyMinute).toBeLessThanOrEqual(100);
    expect(k.maxCallsInAnyHour).toBeLessThanOrEqual(1000);
    expect(k.maxActiveTasks).toBeLessThanOrEqual(3);
    expect(k.rejected429).toBe(0);
    expect(k.uploads).toBe(24);
    expect(Object.keys(audit.createsPerSource)).toHaveLength(24);
    expect(Object.values(audit.createsPerSource).every((n) => n === 1)).toBe(true);
    expect(audit.keyLeaks).toEqual([]);
  });

  it('keeps the key out of stdout, stderr, the ledger and the log, which are private files', () => {
    expect(first.stdout + first.stderr).not.toContain(KEY);
    const ledgerDir = path.dirname(job.ledgerFile);
    for (const f of readdirSync(ledgerDir)) {
      const p = path.join(ledgerDir, f);
      expect(readFileSync(p).includes(Buffer.from(KEY)), f).toBe(false);
      if (/\.(db|log)$/.test(f)) expect(statSync(p).mode & 0o777, f).toBe(0o600);
    }
  });

  it('does nothing for photos already done when run again', async () => {
    const before = sim.model.audit().keys[fingerprintKey(KEY)]!.calls;
    const again = await runCli(['run', job.jobsFile, '--base-url', sim.apiUrl], { DARKROOM_TEST_KEY: KEY });
    expect(again.code).toBe(0);
    expect(sim.model.audit().keys[fingerprintKey(KEY)]!.calls).toBe(before);
  });

  it("status --json reads the ledger with the contract's fields", async () => {
    const s = await runCli(['status', job.jobsFile, '--json']);
    expect(s.code).toBe(0);
    const j = JSON.parse(s.stdout) as Record<string, number>;
    expect(j).toMatchObject({ total: 24, done: 24, failed: 0, held: 0, pending: 0 });
  });
});

describe('darkroom status during a run', () => {
  it('answers from the ledger while the run is writing it', async () => {
    const sim = await startSim({ keys: [KEY], seed: 4, latency: { medianMs: 1500, sigma: 0.2 } });
    const job = await makeJob({ photos: 4, steps: [{ capability: 'enhance' }] });
    try {
      const run = runCli(['run', job.jobsFile, '--base-url', sim.apiUrl], { DARKROOM_TEST_KEY: KEY });
      let seenRunning = false;
      for (let i = 0; i < 100 && !seenRunning; i++) {
        await new Promise((r) => setTimeout(r, 100));
        if (!existsSync(job.ledgerFile)) continue;
        const s = await runCli(['status', job.jobsFile, '--json']);
        if (s.code !== 0) continue;
        const j = JSON.parse(s.stdout) as { total: number; pending: number };
        if (j.total === 4 && j.pending > 0) seenRunning = true;
      }
      expect(seenRunning).toBe(true);
      const second = await runCli(['run', job.jobsFile, '--base-url', sim.apiUrl], { DARKROOM_TEST_KEY: KEY });
      const r = await run;
      // a second runner on the same ledger is refused (L6), unless the first had already ended
      if (second.code !== 0) {
        expect(second.code).toBe(2);
        expect(second.stderr).toMatch(/another darkroom run \(pid \d+\) is using the ledger/);
      }
      expect(r.code).toBe(0);
    } finally {
      await sim.close();
      job.cleanup();
    }
  });
});
