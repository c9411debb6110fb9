import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { makeJob, type TestJob } from '../helpers/job.js';

/**
 * What the CLI prints reaches a reader on a pipe whole, however much it is, before the process
 * exits (`darkroom plan --json | jq`): a pipe takes 64 KiB at a time, and an exit that does not
 * wait for the reader drops the rest. Here `plan --json` lists 1,500 skipped inputs (empty
 * files with long names): about 250 KB of JSON, read through the child's pipe.
 */
let job: TestJob;
const BROKEN = 1_500;

beforeAll(async () => {
  job = await makeJob({ photos: 1 });
  const folder = path.join(job.inputDir, 'a folder whose name is long enough to make each line of the listing long');
  mkdirSync(folder, { recursive: true });
  for (let i = 0; i < BROKEN; i++)
    writeFileSync(path.join(folder, `a broken scan left by the scanning station ${String(i).padStart(5, '0')}.jpg`), `not a JPEG ${i}`);
});

afterAll(() => job?.cleanup());

describe('output on a pipe', () => {
  it('reaches the reader whole before the process exits', async () => {
    const r = await runCli(['plan', job.jobsFile, '--json'], {});
    expect(r.code).toBe(0);
    expect(r.stdout.length).toBeGreaterThan(4 * 65_536);
    const plan = JSON.parse(r.stdout) as { inputs: { found: number; skipped: { path: string }[] } };
    expect(plan.inputs.found).toBe(BROKEN + 1);
    expect(plan.inputs.skipped).toHaveLength(BROKEN);
  });
});
