import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { fingerprintKey } from '../../src/spec/key.js';
import { startSim, type RunningSim } from '../../src/sim/server.js';
import { runCli } from '../helpers/cli.js';
import { makeJob, writePhoto, type TestJob } from '../helpers/job.js';
import { corruptZlibPng, truncatedJpeg } from '../inputs/damaged.js';

const KEY = 'e2e-inputs-key-5c1d9e07';

/**
 * Issue 12, point 10, through the real CLI against the HTTP simulator: hidden files are
 * counted and mentioned in the run's summary (and included with input.hidden: true); a photo
 * whose file was deleted before it was done is reported as gone by the summary and by
 * `status --json`, outside the total.
 */
describe('darkroom run: hidden files and deleted inputs', () => {
  let sim: RunningSim;
  let job: TestJob;
  const run = () => runCli(['run', job.jobsFile, '--base-url', sim.apiUrl], { DARKROOM_TEST_KEY: KEY });
  const uploads = () => sim.model.audit().keys[fingerprintKey(KEY)]?.uploads ?? 0;

  beforeAll(async () => {
    sim = await startSim({ keys: [KEY], seed: 5, latency: { medianMs: 50, sigma: 0.2 } });
    job = await makeJob({ photos: 3, steps: [{ capability: 'enhance' }] });
    await writePhoto(path.join(job.inputDir, '.hidden.jpg'), 7);
    await writePhoto(path.join(job.inputDir, '.thumbnails', 'thumb.png'), 8, 'png');
    writeFileSync(path.join(job.inputDir, 'damaged.png'), await corruptZlibPng());
  }, 60_000);

  afterAll(async () => {
    await sim?.close();
    job?.cleanup();
  });

  it('mentions the hidden files it left out, and skips the damaged photo at no call', async () => {
    const r = await run();
    expect(r.stderr).not.toMatch(/unexpected error/);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/3 total · 3 done · 0 failed · 0 held · 0 pending · 1 skipped/);
    expect(r.stderr).toContain(
      'note: 2 hidden files (names starting with a dot) were not included; set input.hidden: true to include them',
    );
    expect(r.stdout).toMatch(/damaged\.png {2}step 1: truncated or damaged PNG \(/);
    expect(uploads()).toBe(3);
  }, 120_000);

  it('reports a deleted photo as gone, in the summary and in status --json, outside the total', async () => {
    rmSync(path.join(job.inputDir, 'damaged.png'));
    const r = await run();
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/3 total · 3 done · 0 failed · 0 held · 0 pending · 1 gone/);
    const s = await runCli(['status', job.jobsFile, '--json']);
    expect(s.code).toBe(0);
    const j = JSON.parse(s.stdout) as {
      total: number;
      done: number;
      failed: number;
      held: number;
      pending: number;
      gone: number;
      states: Record<string, number>;
    };
    expect(j).toMatchObject({ total: 3, done: 3, failed: 0, held: 0, pending: 0, skipped: 0, gone: 1 });
    expect(j.states.gone).toBe(1);
    expect(j.total).toBe(j.done + j.failed + j.held + j.pending);
    expect(uploads()).toBe(3);
  }, 120_000);

  it('includes the hidden files with input.hidden: true', async () => {
    const doc = parse(readFileSync(job.jobsFile, 'utf8')) as { input: Record<string, unknown> };
    doc.input.hidden = true;
    writeFileSync(job.jobsFile, stringify(doc));
    const r = await run();
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/5 total · 5 done/);
    expect(r.stdout).not.toContain('hidden file');
    expect(uploads()).toBe(5);
  }, 120_000);
});

/**
 * An input darkroom will never send (a truncated JPEG) is not a failed photo: its own count
 * and word, outside the total, so the job can reach "all done" and a nightly run exits 0 when
 * all that can be done is done; something that went wrong (a failed photo) is still exit 1.
 */
describe('darkroom run: an input it will never send', () => {
  let sim: RunningSim;
  let job: TestJob;
  afterAll(async () => {
    await sim?.close();
    job?.cleanup();
  });

  it('is "skipped", outside the total: every night exits 0 once the rest is done, and status, --json and retry say so', async () => {
    sim = await startSim({ keys: [KEY], seed: 9, latency: { medianMs: 50, sigma: 0.2 } });
    job = await makeJob({ photos: 3, steps: [{ capability: 'enhance' }] });
    writeFileSync(path.join(job.inputDir, 'cut.jpg'), await truncatedJpeg());
    for (let night = 1; night <= 2; night++) {
      const r = await runCli(['run', job.jobsFile, '--base-url', sim.apiUrl, '--json'], { DARKROOM_TEST_KEY: KEY });
      expect(r.code, r.stderr).toBe(0);
      const summary = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;
      expect(summary).toMatchObject({ type: 'summary', total: 3, done: 3, failed: 0, skipped: 1, pending: 0, exitCode: 0 });
      expect(r.stderr).toMatch(/3 total · 3 done · 0 failed · 0 held · 0 pending · 1 skipped/);
      expect(r.stderr).toMatch(/skipped {2}1 input\(s\) darkroom will not send/);
      expect(r.stderr).toMatch(/cut\.jpg {2}step 1: /);
      expect(r.stderr).not.toMatch(/retry --failed/);
    }
    const s = await runCli(['status', job.jobsFile, '--json']);
    expect(JSON.parse(s.stdout)).toMatchObject({ total: 3, done: 3, failed: 0, skipped: 1, held: 0, pending: 0 });
    const human = await runCli(['status', job.jobsFile]);
    expect(human.stdout).toMatch(/step 1 +enhance: 3\/3 past it \(100%\)/);
    const retry = await runCli(['retry', '--failed', job.jobsFile]);
    expect(retry.code).toBe(0);
    expect(retry.stdout).toMatch(/nothing has failed/);
    expect(retry.stdout).toMatch(/1 skipped input\(s\) are not retried by this/);
  }, 120_000);
});
