import { existsSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fingerprintKey } from '../../src/spec/key.js';
import { startSim, type RunningSim } from '../../src/sim/server.js';
import { runCli } from '../helpers/cli.js';
import { makeJob, writePhoto, type TestJob } from '../helpers/job.js';
import { simulate } from '../helpers/simulate.js';

const KEY = 'plan-test-key-4a7e29c1';
const FP = fingerprintKey(KEY);

interface PlanJson {
  ledgerExists: boolean;
  inputs: {
    found: number;
    skipped: { path: string; reason: string }[];
    done: number;
    inProgress: number;
    held: number;
    failed: number;
    toDo: number;
  };
  steps: {
    index: number;
    capability: string;
    photos: number;
    creditsPerImage: number | null;
    creditsFrom: string | null;
    latencyMs: number;
    latencyFrom: string;
  }[];
  calls: { uploads: number; creates: number; polls: number; total: number };
  credits: { known: number; unknownFor: string[]; needed: number | null };
  time: { keys: number; ms: number; binds: string; hourMs: number; minuteMs: number; slotsMs: number; usedHour: number };
  account: {
    checked: boolean;
    why?: string;
    key?: string;
    credits?: { remainingCredit: number } | null;
    enough?: boolean | null;
    accountStop?: boolean;
  };
}

const filesUnder = (dir: string) => readdirSync(dir, { recursive: true }).map(String).sort();

describe('darkroom plan, a dry run', () => {
  let sim: RunningSim;
  let job: TestJob;

  beforeAll(async () => {
    sim = await startSim({ keys: [KEY], seed: 9, latency: { medianMs: 400, sigma: 0.3 }, credits: 25 });
    // 30 photos, plus two files that discovery refuses before any call.
    job = await makeJob({ photos: 30, steps: [{ capability: 'enhance' }, { capability: 'restore' }] });
    writeFileSync(path.join(job.inputDir, 'empty.jpg'), '');
    writeFileSync(path.join(job.inputDir, 'notes.png'), 'not an image at all');
  });

  afterAll(async () => {
    await sim?.close();
    job?.cleanup();
  });

  it('before any run: what the job needs, from the budget model, without creating a ledger or calling the service', async () => {
    const before = filesUnder(job.dir);
    const r = await runCli(['plan', job.jobsFile, '--json', '--latency', '20', '--cost', 'restore=2'], {});
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const p = JSON.parse(r.stdout) as PlanJson;
    expect(filesUnder(job.dir)).toEqual(before);
    expect(existsSync(job.ledgerFile)).toBe(false);
    expect(p.ledgerExists).toBe(false);
    expect(p.inputs).toMatchObject({ found: 32, done: 0, inProgress: 0, toDo: 30 });
    expect(p.inputs.skipped.map((s) => s.path).sort()).toEqual(['empty.jpg', 'notes.png']);
    expect(p.inputs.skipped.find((s) => s.path === 'empty.jpg')!.reason).toMatch(/empty/);
    expect(p.inputs.skipped.find((s) => s.path === 'notes.png')!.reason).toMatch(/not a JPG, PNG/);
    // C = 30 · (1 upload + 2 steps · (create + poll)) = 150 calls
    expect(p.calls).toEqual({ uploads: 30, creates: 60, polls: 60, total: 150 });
    // credits: enhance 1 (the spec) + restore 2 (--cost) per photo
    expect(p.steps.map((s) => [s.capability, s.photos, s.creditsPerImage, s.creditsFrom])).toEqual([
      ['enhance', 30, 1, 'spec'],
      ['restore', 30, 2, 'flag'],
    ]);
    expect(p.credits).toEqual({ known: 90, unknownFor: [], needed: 90 });
    // T_slots = 30 · 2 · 20 s / 3 = 400 s; T_min = 150 / 100 = 1.5 min = 90 s; T_hour = 0 → 400 s, slots bound
    expect(p.time).toMatchObject({ keys: 1, binds: 'slots', hourMs: 0, minuteMs: 90_000, slotsMs: 400_000, ms: 400_000, usedHour: 0 });
    expect(p.account.checked).toBe(false);
    expect(p.account.why).toMatch(/DARKROOM_TEST_KEY/);
    expect(sim.model.audit().keys[FP]?.calls ?? 0).toBe(0); // not a single call
  });

  it('with a key: one GET /api/v1/credits against the need; not enough credits is exit 3', async () => {
    const r = await runCli(['plan', job.jobsFile, '--base-url', sim.apiUrl, '--cost', 'restore=2'], { DARKROOM_TEST_KEY: KEY });
    expect(r.code).toBe(3);
    expect(r.stdout).toMatch(/^account  key k_[0-9a-f]{12}: 25 credits remaining \(of 25\) for 90 needed — NOT enough: 65 short$/m);
    expect(r.stdout).toMatch(/^calls    at least 150: 30 upload\(s\) \+ 60 create\(s\) \+ 60 poll\(s\)/m);
    expect(r.stdout).toMatch(/^time     at best \S+( \S+)? with 1 key\(s\) at 100\/min, 1000\/h and 3 tasks each — slots bound/m);
    expect(r.stdout).toMatch(/^note     a dry run: no task created, nothing uploaded, no ledger created; the account check was 1 call/m);
    expect(r.stdout + r.stderr).not.toContain(KEY);
    const audit = sim.model.audit().keys[FP]!;
    expect(audit.calls).toBe(1);
    expect(audit.uploads).toBe(0);
    expect(Object.keys(sim.model.audit().createsPerSource)).toHaveLength(0);
    expect(existsSync(job.ledgerFile)).toBe(false);
  });

  it('says the cost is unknown for capabilities the spec prices not, unless given', async () => {
    const r = await runCli(['plan', job.jobsFile], {});
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      /^step 2   restore: 30 photo\(s\) · credits unknown \(the spec states none for restore; give --cost restore=N\)/m,
    );
    expect(r.stdout).toMatch(/^credits  at least 30 needed, plus the unknown cost of restore/m);
    expect(r.stdout).toMatch(/^skipped  empty\.jpg: empty file$/m);
    const bad = await runCli(['plan', job.jobsFile, '--cost', 'sharpen=1'], {});
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--cost: expected CAPABILITY=CREDITS/);
  });

  it("after a run: photos already done are counted apart, and the ledger's own latency and windows are used", async () => {
    // Run the job on 6 of the photos, then add them back and plan the rest.
    const sub = await makeJob({ photos: 0, steps: [{ capability: 'enhance' }, { capability: 'restore' }] });
    try {
      for (let i = 0; i < 6; i++) await writePhoto(path.join(sub.inputDir, `p${i}.jpg`), i);
      // The run under the virtual clock (its timing is not what is tested), ending minutes before
      // now, so its calls are this hour's to the plan made now on the real clock.
      const run = await simulate({
        job: sub,
        ledger: sub.ledgerFile,
        keys: { DARKROOM_TEST_KEY: KEY },
        sim: { seed: 10, latency: { medianMs: 400, sigma: 0.3 } },
        startMs: Date.now() - 10 * 60_000,
      });
      run.ledger.close();
      expect(run.result.exitCode).toBe(0);
      for (let i = 6; i < 10; i++) await writePhoto(path.join(sub.inputDir, `p${i}.jpg`), i);
      const r = await runCli(['plan', sub.jobsFile, '--json', '--cost', 'restore=1'], {});
      expect(r.code).toBe(0);
      const p = JSON.parse(r.stdout) as PlanJson;
      expect(p.ledgerExists).toBe(true);
      expect(p.inputs).toMatchObject({ found: 10, done: 6, toDo: 4, held: 0, failed: 0 });
      expect(p.calls).toEqual({ uploads: 4, creates: 8, polls: 8, total: 20 });
      expect(p.credits.needed).toBe(8);
      // latency measured by the run, and its calls counted in the hour it inherits
      for (const s of p.steps) expect(s.latencyFrom).toBe('ledger');
      expect(p.time.usedHour).toBe(run.audit.keys[FP]!.calls);
    } finally {
      sub.cleanup();
    }
  });

  it('refuses a missing jobs file and a missing input folder with exit 2', async () => {
    const r = await runCli(['plan', path.join(job.dir, 'nope.yaml')], {});
    expect(r.code).toBe(2);
    const gone = await makeJob({ photos: 1 });
    rmSync(gone.inputDir, { recursive: true });
    const r2 = await runCli(['plan', gone.jobsFile], {});
    expect(r2.code).toBe(2);
    expect(r2.stderr).toMatch(/input\.dir/);
    gone.cleanup();
  });
});
