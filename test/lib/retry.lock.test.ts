/**
 * The library's retry() is a writer like any other (§ L6; issue 15, hostile report 3): it
 * takes the ledger's lock before it reads anything, so while a run holds the ledger it
 * rejects LOCKED, even when nothing is held or failed yet, and changes nothing.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DarkroomError, retry, run } from '../../src/index.js';
import { startSimulator, type Simulator } from '../../src/simulator.js';
import { testStateDir } from '../helpers/cli.js';
import { makeJob, type TestJob } from '../helpers/job.js';

let sim: Simulator;
let job: TestJob;

beforeAll(async () => {
  process.env.DARKROOM_STATE_DIR = testStateDir();
  // Slow tasks: the run is still going when retry() is called.
  sim = await startSimulator({ latencyMs: 5000, sigma: 0.1 });
  job = await makeJob({ photos: 2, baseUrl: sim.url, steps: [{ capability: 'enhance' }] });
  // Skipped by discovery: its event comes while the run holds the ledger.
  writeFileSync(path.join(job.inputDir, 'notes.jpg'), 'not an image');
});
afterAll(async () => {
  await sim.close();
  job.cleanup();
});

it('rejects LOCKED while a run holds the ledger, and works once the run is over', async () => {
  const ac = new AbortController();
  let called!: (outcome: Promise<unknown>) => void;
  const during = new Promise<Promise<unknown>>((r) => (called = r));
  const running = run(job.jobsFile, {
    apiKey: sim.keys[0],
    signal: ac.signal,
    onEvent: (e) => {
      if (e.type === 'skipped') called(retry(job.jobsFile, { held: true, failed: true }).catch((err: unknown) => err));
    },
  });
  const err = await await during;
  ac.abort();
  const summary = await running;
  expect(err).toBeInstanceOf(DarkroomError);
  expect((err as DarkroomError).code).toBe('LOCKED');
  expect(summary.interrupted).toBe(true);

  // The run is over: the lock is free, and the skipped photo is no failed one to retry.
  await expect(retry(job.jobsFile, { held: true, failed: true })).resolves.toEqual({ recreated: 0, repolled: 0, downloads: 0, note: null });
});
