import { copyFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { startSim, type RunningSim } from '../../src/sim/server.js';
import { launchBrowser } from '../helpers/browser.js';
import { runCli } from '../helpers/cli.js';
import { makeJob, setSteps, type TestJob } from '../helpers/job.js';

const KEY = 'e2e-duplicates-key-4b7a01';
const ENV = { DARKROOM_TEST_KEY: KEY };

/**
 * A byte-for-byte copy of a photo under another folder is the same photo (a photo is its
 * content): plan counts it once before the run, after it and after a steps change, as the
 * run pays for it; the report shows its other name, and a filter on that name finds it.
 */
describe('a photo under two names', () => {
  let sim: RunningSim;
  let job: TestJob;
  afterAll(async () => {
    await sim?.close();
    job?.cleanup();
  });

  it('is one photo to plan, to pay for and to report, and each name is found', async () => {
    sim = await startSim({ keys: [KEY], seed: 6, latency: { medianMs: 100, sigma: 0.2 } });
    // enhance costs 1 credit a photo (the spec's price): the plan's credits are its photos.
    job = await makeJob({ photos: 3, steps: [{ capability: 'enhance' }] });
    const first = [...job.sizes.keys()][0]!;
    mkdirSync(path.join(job.inputDir, 'copies'));
    copyFileSync(path.join(job.inputDir, first), path.join(job.inputDir, 'copies', 'same bytes.jpg'));
    const plan = () => runCli(['plan', job.jobsFile, '--base-url', sim.apiUrl], ENV);

    const before = await plan();
    expect(before.code, before.stderr).toBe(0);
    expect(before.stdout).toMatch(/^inputs +4 found · 1 the same photo as another \(no cost\) · 0 skipped · 0 already done · 3 to do$/m);
    expect(before.stdout).toMatch(/^calls +at least 9: 3 upload\(s\) \+ 3 create\(s\) \+ 3 poll\(s\)/m);
    expect(before.stdout).toMatch(/^credits +3 needed/m);

    const run = await runCli(['run', job.jobsFile, '--base-url', sim.apiUrl], ENV);
    expect(run.code, run.stderr).toBe(0);
    expect(Object.values(sim.model.audit().createsPerSource)).toEqual([1, 1, 1]);

    const after = await plan();
    expect(after.stdout).toMatch(/^inputs +4 found · 1 the same photo as another \(no cost\) · 0 skipped · 3 already done · 0 to do$/m);
    expect(after.stdout).toMatch(/^credits +0 needed/m);

    // Other steps: every photo is redone (run --redo-steps), the copy with its twin.
    setSteps(job, [{ capability: 'enhance', mode: 'portrait' }]);
    const changed = await plan();
    expect(changed.stdout).toMatch(
      /^inputs +4 found · 1 the same photo as another \(no cost\) · 0 skipped · 0 already done · 3 to do \(3 in progress\)$/m,
    );

    const out = path.join(job.dir, 'report.html');
    const report = await runCli(['report', job.jobsFile, '--out', out]);
    expect(report.code, report.stderr).toBe(0);
    const browser = await launchBrowser();
    try {
      const page = await browser.newPage();
      await page.goto(pathToFileURL(out).href);
      const rows = page.locator('#photo-rows tr');
      expect(await rows.count()).toBe(3);
      await page.fill('#path-filter', 'copies');
      expect(await rows.count()).toBe(1);
      expect(await rows.locator('td.path .p').innerText()).toBe(first);
      expect(await rows.locator('td.path .also').innerText()).toBe('also as copies/same bytes.jpg');
    } finally {
      await browser.close();
    }
  }, 120_000);
});
