import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { afterEach, describe, expect, it } from 'vitest';
import { stepsSignature } from '../../src/config/steps.js';
import type { StepConfig } from '../../src/config/index.js';
import type { RunResult } from '../../src/run/context.js';
import type { SimModel, SimOptions } from '../../src/sim/model.js';
import { filesUnder, makeJob, setSteps, type TestJob } from '../helpers/job.js';
import { simSession, simulate, type SimSession } from '../helpers/simulate.js';
import { look as query } from '../helpers/ledger.js';

/**
 * Issue 12, point 6: the job's step list is part of each photo's identity. A run stopped
 * part-way under one list, then the job changed (a step removed, added, or its mode
 * changed): the next run refuses before any call, saying what a redo costs; with
 * --redo-steps every output on disk comes from the new list; nothing crashes.
 */

const cleanups: (() => void)[] = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

const UP = { capability: 'upscale', resolution: '4K' };
const TWO = [UP, UP];
const ONE = [UP];

/** One job across runs (the same model, file ledger and clock), as an operator's nights. */
function night(job: TestJob, sim: Partial<SimOptions>): SimSession {
  return simSession({ job, seed: 4242, sim: { seed: 5, ...sim }, ledger: job.ledgerFile, runOptions: { graceMs: 0 } });
}

async function start(steps: unknown[], photos = 6): Promise<SimSession> {
  const job = await makeJob({ photos, steps, extra: { output: { dir: './out', sidecar: true } } });
  const n = night(job, { processing: 'sharp', latency: { medianMs: 10_000, sigma: 0.3 } });
  cleanups.push(job.cleanup, () => n.ledger.close());
  return n;
}

interface SidecarSteps {
  stepsSig: string;
  steps: { capability: string; options: Record<string, string>; taskIds: string[] }[];
}

/** Every photo's output on disk: its pixel size, and what its sidecar says about the steps. */
async function outputs(n: SimSession): Promise<Map<string, { width: number; height: number; sidecar: SidecarSteps }>> {
  const out = new Map<string, { width: number; height: number; sidecar: SidecarSteps }>();
  for (const rel of n.job.sizes.keys()) {
    const file = path.join(n.job.outputDir, rel.replace(/\.[a-z]+$/, '.jpg'));
    expect(existsSync(file), rel).toBe(true);
    const meta = await sharp(file).metadata();
    out.set(rel, { width: meta.width!, height: meta.height!, sidecar: JSON.parse(readFileSync(`${file}.json`, 'utf8')) as SidecarSteps });
  }
  return out;
}

/** Photos past their first create: what a redo sends back. */
function started(n: SimSession): number {
  return query<{ n: number }>(
    n.job.ledgerFile,
    "SELECT COUNT(*) AS n FROM items WHERE state NOT IN ('queued', 'uploading', 'skipped') AND NOT (state = 'uploaded' AND step_index = 0)",
  )[0]!.n;
}

/** The next night's run; with `redoSteps`, as `darkroom run --redo-steps`. */
async function runNight(n: SimSession, o: { redoSteps?: true } = {}): Promise<RunResult> {
  return (await simulate({ ...n, runOptions: { ...n.runOptions, ...o } })).result;
}

/** Calls the simulator saw from any key, in all. */
function callsSeen(model: SimModel): number {
  return Object.values(model.audit().keys).reduce((sum, k) => sum + k.calls, 0);
}

/** Stopped part-way (an operator's Ctrl-C once this many creates were answered): some photos done, others in progress. */
async function stopPartWay(n: SimSession, abortAfterCreates: number) {
  const ac = new AbortController();
  let creates = 0;
  const { result: r } = await simulate({
    ...n,
    signal: ac.signal,
    intercept: async (req, forward) => {
      const res = await forward();
      if (req.url.endsWith('/generate') && ++creates === abortAfterCreates) ac.abort();
      return res;
    },
  });
  expect(r.exitCode).toBe(130);
  expect(r.status.done).toBeGreaterThan(0);
  expect(r.status.pending).toBeGreaterThan(0);
  return r;
}

describe('a changed step list', () => {
  it('a removed step: the next run refuses before any call, with the line and the cost; --redo-steps makes every output one step', async () => {
    const n = await start(TWO);
    const first = await stopPartWay(n, 8);
    setSteps(n.job, ONE);

    const calls = callsSeen(n.model);
    const refused = await runNight(n);
    expect(refused.exitCode).toBe(2);
    expect(callsSeen(n.model)).toBe(calls);
    expect(refused.halt?.message).toMatch(
      /the job's steps changed: \d+ photo\(s\) were started under other steps .*nothing was sent.*--redo-steps/,
    );
    const c = refused.stepsChange!;
    expect(c.outcome).toBe('refused');
    expect(c.redo).toBe(started(n));
    expect(c.redo).toBeGreaterThan(first.status.done);
    expect(c.cost.creates).toBe(c.redo);
    expect(c.others[0]!.steps).toEqual([
      { capability: 'upscale', resolution: '4K' },
      { capability: 'upscale', resolution: '4K' },
    ]);
    // nothing moved: the refusal wrote nothing
    expect(refused.status.states).toEqual(first.status.states);

    const redone = await runNight(n, { redoSteps: true });
    expect(redone.exitCode).toBe(0);
    expect(redone.status).toMatchObject({ total: 6, done: 6, failed: 0, held: 0, pending: 0 });
    const sig = stepsSignature(ONE as StepConfig[]);
    for (const [rel, o] of await outputs(n)) {
      const size = n.job.sizes.get(rel)!;
      expect([o.width, o.height], rel).toEqual([size.width * 2, size.height * 2]);
      expect(o.sidecar.stepsSig, rel).toBe(sig);
      expect(
        o.sidecar.steps.map((s) => s.capability),
        rel,
      ).toEqual(['upscale']);
    }
    expect(filesUnder(n.job.outputDir).filter((f) => !/\.jpg(\.json)?$/.test(f))).toEqual([]);
    expect(query<{ n: number }>(n.job.ledgerFile, 'SELECT COUNT(*) AS n FROM items WHERE steps_sig != ?', sig)[0]!.n).toBe(0);
  });

  it('an added step: refused the same way; --redo-steps makes every output two steps, the old one-step outputs replaced', async () => {
    const n = await start(ONE);
    await stopPartWay(n, 4);
    setSteps(n.job, TWO);
    const calls = callsSeen(n.model);
    const refused = await runNight(n);
    expect(refused.exitCode).toBe(2);
    expect(callsSeen(n.model)).toBe(calls);
    expect(refused.stepsChange!.cost.creates).toBe(refused.stepsChange!.redo * 2);

    const redone = await runNight(n, { redoSteps: true });
    expect(redone.exitCode).toBe(0);
    for (const [rel, o] of await outputs(n)) {
      const size = n.job.sizes.get(rel)!;
      expect([o.width, o.height], rel).toEqual([size.width * 4, size.height * 4]);
      expect(
        o.sidecar.steps.map((s) => s.capability),
        rel,
      ).toEqual(['upscale', 'upscale']);
      expect(o.sidecar.stepsSig, rel).toBe(stepsSignature(TWO as StepConfig[]));
    }
  });

  it('a changed mode: refused; --redo-steps redoes under the new mode, tasks running under the old one abandoned and on record', async () => {
    const general = [{ capability: 'upscale', mode: 'general' }];
    const portrait = [{ capability: 'upscale', mode: 'portrait' }];
    const n = await start(general);
    const first = await stopPartWay(n, 4);
    expect(first.status.states.active).toBeGreaterThan(0);
    setSteps(n.job, portrait);
    const refused = await runNight(n);
    expect(refused.exitCode).toBe(2);
    expect(refused.stepsChange!.others[0]!.steps).toEqual([{ capability: 'upscale', mode: 'general' }]);

    const redone = await runNight(n, { redoSteps: true });
    expect(redone.exitCode).toBe(0);
    for (const [rel, o] of await outputs(n)) {
      expect(
        o.sidecar.steps.map((s) => s.options),
        rel,
      ).toEqual([{ mode: 'portrait' }]);
      expect(o.sidecar.steps[0]!.taskIds, rel).toHaveLength(1);
    }
    const abandoned = query<{ n: number; open: number }>(
      n.job.ledgerFile,
      "SELECT COUNT(*) AS n, SUM(ended_ms IS NULL) AS open FROM attempts WHERE status = 'ABANDONED'",
    )[0]!;
    expect(abandoned.n).toBe(first.status.states.active);
    expect(abandoned.open).toBe(abandoned.n);
  });

  it('the old steps put back after a refusal: the run finishes the photos under them, nothing redone', async () => {
    const n = await start(TWO, 4);
    // 7 of the 8 creates: some photos done, one still in progress (after 6, how many are
    // done depends on when polls see the first tasks end, which issue 16's polling moved).
    await stopPartWay(n, 7);
    setSteps(n.job, ONE);
    expect((await runNight(n)).exitCode).toBe(2);
    setSteps(n.job, TWO);
    const creates = () => Object.values(n.model.audit().keys)[0]!.creates;
    const before = creates();
    const r = await runNight(n);
    expect(r.exitCode).toBe(0);
    expect(r.stepsChange).toBeUndefined();
    // every photo has its two tasks, once: the ones made before the stop count
    expect(creates()).toBe(8);
    expect(before).toBeLessThan(8);
    for (const [rel, o] of await outputs(n)) expect(o.width, rel).toBe(n.job.sizes.get(rel)!.width * 4);
  });

  it('photos that failed under the old steps do not stop the run: they are bound to the new steps, from the first', async () => {
    const job = await makeJob({ photos: 3, steps: TWO });
    const n = night(job, { outcomes: { error: 1 }, latency: { medianMs: 5_000, sigma: 0.2 } });
    cleanups.push(job.cleanup, () => n.ledger.close());
    expect((await runNight(n)).status).toMatchObject({ failed: 3, done: 0 });
    setSteps(job, ONE);
    const r = await runNight(n);
    expect(r.exitCode).toBe(1);
    expect(r.stepsChange).toMatchObject({ outcome: 'bound', redo: 0, failed: 3 });
    const rows = query<{ steps_sig: string; step_index: number; state: string }>(
      job.ledgerFile,
      'SELECT steps_sig, step_index, state FROM items',
    );
    expect(rows).toEqual(Array(3).fill({ steps_sig: stepsSignature(ONE as StepConfig[]), step_index: 0, state: 'failed' }));
  });
});

describe('outputs redone under new steps', () => {
  it('an output of another type replaces the old one: the old file and its sidecar are removed once the new one is in place', async () => {
    const n = await start(ONE, 3);
    expect((await runNight(n)).exitCode).toBe(0);
    const old = filesUnder(n.job.outputDir);
    expect(old.filter((f) => f.endsWith('.jpg'))).toHaveLength(3);
    setSteps(n.job, [{ capability: 'remove-background' }]);
    expect((await runNight(n)).exitCode).toBe(2);
    expect(filesUnder(n.job.outputDir)).toEqual(old);
    const r = await runNight(n, { redoSteps: true });
    expect(r.exitCode).toBe(0);
    const now = filesUnder(n.job.outputDir);
    expect(now).toEqual(old.map((f) => f.replace(/\.jpg(\.json)?$/, '.png$1')).sort());
    for (const f of now.filter((x) => x.endsWith('.json'))) {
      const sc = JSON.parse(readFileSync(path.join(n.job.outputDir, f), 'utf8')) as SidecarSteps;
      expect(
        sc.steps.map((s) => s.capability),
        f,
      ).toEqual(['remove-background']);
    }
    expect(query<{ n: number }>(n.job.ledgerFile, "SELECT COUNT(*) AS n FROM output_files WHERE path LIKE '%.jpg%'")[0]!.n).toBe(0);
  });
});
