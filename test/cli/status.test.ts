import type { ChildProcess } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fingerprintKey } from '../../src/spec/key.js';
import { startSim, type RunningSim } from '../../src/sim/server.js';
import { runCli, type CliResult } from '../helpers/cli.js';
import { makeJob, makeTempDir, type TestJob } from '../helpers/job.js';

const KEY = 'status-test-key-93c1d07e';
const FP = fingerprintKey(KEY);

interface StatusJson {
  total: number;
  done: number;
  failed: number;
  held: number;
  pending: number;
  skipped: number;
  states: Record<string, number>;
  calls: {
    total: number;
    perKey: Record<string, { lastMinute: number; lastHour: number }>;
    uploads: number;
    tasks: number;
    account: number;
  };
  problems: {
    id: number;
    path: string;
    state: string;
    step: number;
    reason: string | null;
    sentRequestId: string | null;
    requestId: string | null;
    taskId: string | null;
  }[];
  atMs: number;
  steps: {
    step: number;
    index: number;
    capability: string | null;
    done: number;
    total: number;
    running: number;
    working: number;
    waiting: number;
    failed: number;
    held: number;
  }[];
  tasks: { active: number; perKey: Record<string, number> };
  limits: { callsPerMinute: number; callsPerHour: number; activeTasks: number; from: string } | null;
  throughput: { windowMs: number; photosDone: number; photosPerMinute: number; callsPerMinute: number };
  callsPerStep: number | null;
  eta: { ms: number; binds: string; remainingCalls: number; basis: string } | null;
}

describe('darkroom status, from the ledger alone', () => {
  let sim: RunningSim;
  let job: TestJob;
  let run: CliResult;
  const during: StatusJson[] = [];

  beforeAll(async () => {
    // Some creates are answered by a dropped connection (held: outcome unknown), some tasks end ERROR (failed).
    sim = await startSim({
      keys: [KEY],
      seed: 21,
      latency: { medianMs: 600, sigma: 0.3 },
      outcomes: { error: 0.4 },
      faults: { droppedCreate: { probability: 0.3 } },
    });
    job = await makeJob({ photos: 8, steps: [{ capability: 'enhance' }] });
    const p = runCli(['run', job.jobsFile, '--base-url', sim.apiUrl], { DARKROOM_TEST_KEY: KEY }, { timeoutMs: 300_000 });
    let finished = false;
    void p.then(() => (finished = true));
    // Watch it from the side, as an operator would.
    while (!finished) {
      await new Promise((r) => setTimeout(r, 300));
      if (!existsSync(job.ledgerFile)) continue;
      const s = await runCli(['status', job.jobsFile, '--json'], { DARKROOM_TEST_KEY: KEY });
      if (s.code === 0) during.push(JSON.parse(s.stdout) as StatusJson);
    }
    run = await p;
  }, 320_000);

  afterAll(async () => {
    await sim?.close();
    job?.cleanup();
  });

  it('the run ended with some photos held and some failed (exit 1)', () => {
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/held:/);
    expect(run.stdout).toMatch(/failed:/);
  });

  it("--json keeps the contract's fields and their meaning, and adds the progress figures", async () => {
    const r = await runCli(['status', job.jobsFile, '--json'], { DARKROOM_TEST_KEY: KEY });
    expect(r.code).toBe(0);
    const j = JSON.parse(r.stdout) as StatusJson;
    expect(j.total).toBe(8);
    expect(j.total).toBe(j.done + j.failed + j.held + j.pending);
    expect(j.pending).toBe(0);
    expect(j.held).toBeGreaterThan(0);
    expect(j.failed).toBeGreaterThan(0);
    expect(j.done).toBe(j.states.done);
    // per step: the photos past step 1 are exactly the done ones (one step, none skipped)
    expect(j.steps).toEqual([
      {
        step: 1,
        index: 0,
        capability: 'enhance',
        done: j.done,
        total: 8,
        running: 0,
        working: 0,
        waiting: 0,
        failed: j.failed,
        held: j.held,
      },
    ]);
    // One step numbering (issue 13): step 1 in JSON as in the text, for the problems too.
    expect((j as unknown as { problems: { step: number }[] }).problems.map((p) => p.step)).toEqual(j.problems.map(() => 1));
    expect(j.tasks).toEqual({ active: 0, perKey: { [FP]: 0 } });
    expect(j.limits).toEqual({ callsPerMinute: 100, callsPerHour: 1000, activeTasks: 3, from: 'jobs' });
    expect(j.eta).toBeNull();
    // the ledger counted every call the simulator saw from this key (the audit counts all, rejected too)
    const audit = sim.model.audit().keys[FP]!;
    expect(j.calls.total).toBe(audit.calls);
    expect(j.calls.uploads).toBe(audit.uploads);
    expect(j.calls.uploads + j.calls.tasks + j.calls.account).toBe(j.calls.total);
    expect(j.calls.perKey[FP]!.lastHour).toBe(j.calls.total);
    expect(j.throughput.photosDone).toBe(j.done);
    // held and failed photos with their reasons and request ids
    const held = j.problems.filter((p) => p.state === 'held');
    const failed = j.problems.filter((p) => p.state === 'failed');
    expect(held).toHaveLength(j.held);
    expect(failed).toHaveLength(j.failed);
    for (const h of held) {
      expect(h.reason).toBeTruthy();
      expect(h.sentRequestId).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
    }
    for (const f of failed) {
      expect(f.reason).toMatch(/ERROR/);
      expect(f.taskId).toBeTruthy();
    }
  });

  it('was readable during the run, with tasks per key within the slots and calls in the windows', () => {
    expect(during.length).toBeGreaterThan(0);
    const busy = during.filter((s) => s.pending > 0);
    expect(busy.length).toBeGreaterThan(0);
    for (const s of during) {
      expect(s.total).toBe(s.done + s.failed + s.held + s.pending);
      expect(s.tasks.active).toBeLessThanOrEqual(3);
      for (const n of Object.values(s.tasks.perKey)) expect(n).toBeLessThanOrEqual(3);
      if (s.calls.total > 0) expect(s.calls.perKey[FP]!.lastMinute).toBeGreaterThan(0);
    }
    // with work left, an ETA from the budget model
    expect(busy.some((s) => s.eta !== null && s.eta.ms >= 0 && ['hour', 'minute', 'slots'].includes(s.eta.binds))).toBe(true);
    expect(busy.some((s) => s.tasks.active > 0)).toBe(true);
  });

  it('prints the same figures for people: per step, per key, rate, and the held and failed photos with their ids', async () => {
    const r = await runCli(['status', job.jobsFile], { DARKROOM_TEST_KEY: KEY });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^photos   8 total · \d done · \d failed · \d held · 0 pending$/m);
    expect(r.stdout).toMatch(/^step 1   enhance: \d\/8 past it \(\d+%\) · \d failed at it · \d held at it$/m);
    expect(r.stdout).toContain(`key      ${FP}: 0/3 task slots in use · `);
    expect(r.stdout).toMatch(/^rate     \d photos done in the last /m);
    expect(r.stdout).toMatch(/^eta      nothing left to do$/m);
    // the X-Request-Id sent, once: in the reason or in brackets after it
    expect(r.stdout).toMatch(/^held:\n {2}\S.* step 1: .*X-Request-Id [A-Za-z0-9_-]+/m);
    for (const line of r.stdout.split('\n').filter((l) => l.includes('X-Request-Id'))) expect(line.match(/X-Request-Id/g)).toHaveLength(1);
    expect(r.stdout).toMatch(/^failed:\n {2}\S.* step 1: .*ERROR/m);
  });

  it('--watch redraws every 2 s until Ctrl-C, then exits 0', async () => {
    const p = runCli(['status', job.jobsFile, '--watch', '--json'], {}, { timeoutMs: 30_000 });
    await outputCount(p.child, /\n/g, 3);
    p.child.kill('SIGINT');
    const r = await p;
    expect(r.code).toBe(0);
    const frames = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as StatusJson);
    expect(frames.length).toBe(3);
    for (const f of frames) expect(f).toMatchObject({ total: 8, pending: 0 });
    const gaps = frames.slice(1).map((f, i) => f.atMs - frames[i]!.atMs);
    for (const g of gaps) {
      expect(g).toBeGreaterThanOrEqual(1_900);
      expect(g).toBeLessThan(4_000);
    }
  });

  it('--watch without --json and without a terminal prints frames one after another', async () => {
    const p = runCli(['status', '--ledger', job.ledgerFile, '--watch'], {}, { timeoutMs: 30_000 });
    await outputCount(p.child, /^photos {3}8 total/gm, 2);
    p.child.kill('SIGINT');
    const r = await p;
    expect(r.code).toBe(0);
    expect(r.stdout.match(/^photos   8 total/gm)?.length).toBeGreaterThanOrEqual(2);
    expect(r.stdout).not.toMatch(/\x1b/);
  });
});

/** Resolves once the child's stdout so far has `n` matches of `re` (or after 20 s, for the assertions to tell). */
function outputCount(child: ChildProcess, re: RegExp, n: number): Promise<void> {
  return new Promise((resolve) => {
    let text = '';
    const timer = setTimeout(resolve, 20_000);
    child.stdout!.on('data', (d: Buffer) => {
      text += d.toString();
      if ((text.match(re)?.length ?? 0) >= n) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
}

describe('darkroom status without a ledger', () => {
  it('says so (exit 2) and creates nothing', async () => {
    const dir = makeTempDir();
    const r = await runCli(['status', '--ledger', path.join(dir, 'nope.db'), '--json'], {}, { cwd: dir });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/no ledger at .*nope\.db/);
    expect(readdirSync(dir)).toEqual([]);
  });
});
