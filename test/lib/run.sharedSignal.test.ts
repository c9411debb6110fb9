/**
 * One AbortSignal shared by many concurrent runs (issue 15, hostile report 2): a studio's
 * shutdown signal handed to every order's run(). A run adds no listener to the caller's
 * signal (AbortSignal.any follows it without one), so no MaxListenersExceededWarning
 * reaches stderr, and aborting it settles every run.
 */
import { getEventListeners } from 'node:events';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { run, type RunSummary } from '../../src/index.js';
import { startSimulator, type Simulator } from '../../src/simulator.js';
import { testStateDir } from '../helpers/cli.js';
import { makeJob, type TestJob } from '../helpers/job.js';

const RUNS = 12;
let sim: Simulator;
const jobs: TestJob[] = [];

beforeAll(async () => {
  process.env.DARKROOM_STATE_DIR = testStateDir();
  // Slow tasks: every run is still going when the signal is aborted.
  sim = await startSimulator({ latencyMs: 3000, sigma: 0.1, keys: Array.from({ length: RUNS }, (_, i) => `shared-key-${i}`) });
  for (let i = 0; i < RUNS; i++) jobs.push(await makeJob({ photos: 2, baseUrl: sim.url, steps: [{ capability: 'enhance' }] }));
});
afterAll(async () => {
  await sim.close();
  for (const j of jobs) j.cleanup();
});

it('12 runs on one signal: no process warning, at most one abort listener on it, none after, and the abort settles all', async () => {
  const warnings: Error[] = [];
  const onWarning = (w: Error) => warnings.push(w);
  process.on('warning', onWarning);
  try {
    const ac = new AbortController();
    const listeners: number[] = [];
    const sample = () => listeners.push(getEventListeners(ac.signal, 'abort').length);
    // Each run's first photo skipped by discovery: by then the run holds its ledger and is going.
    let going = 0;
    let allGoing!: () => void;
    const ready = new Promise<void>((r) => (allGoing = r));
    const runs: Promise<RunSummary>[] = jobs.map((job, i) => {
      writeNotAnImage(job);
      return run(job.jobsFile, {
        apiKey: sim.keys[i],
        signal: ac.signal,
        onEvent: (e) => {
          sample();
          if (e.type === 'skipped' && ++going === RUNS) allGoing();
        },
      });
    });
    await ready;
    sample();
    ac.abort();
    const summaries = await Promise.all(runs);
    await new Promise<void>((r) => setImmediate(r));
    expect(summaries.every((s) => s.interrupted && s.pending > 0)).toBe(true);
    expect(Math.max(...listeners)).toBeLessThanOrEqual(1);
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(0);
    expect(warnings.map((w) => `${w.name}: ${w.message}`)).toEqual([]);
  } finally {
    process.off('warning', onWarning);
  }
});

function writeNotAnImage(job: TestJob): void {
  writeFileSync(path.join(job.inputDir, 'notes.jpg'), 'not an image');
}
