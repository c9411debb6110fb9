import { writeFileSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { makeJob } from '../helpers/job.js';

/** Each problem is one clear line on stderr and exit code 2, before any call is made. */
describe('darkroom run with a broken config', () => {
  let job: Awaited<ReturnType<typeof makeJob>>;
  let original: string;
  beforeAll(async () => {
    job = await makeJob({ photos: 1, baseUrl: 'http://127.0.0.1:9' });
    original = readFileSync(job.jobsFile, 'utf8');
  });
  afterAll(() => job.cleanup());

  const expectOneLine = (stderr: string) => {
    const lines = stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^darkroom: /);
    return lines[0]!;
  };

  it('names an unknown capability, its key path and the expected values', async () => {
    writeFileSync(job.jobsFile, original.replace('capability: upscale', 'capability: sharpen'));
    const r = await runCli(['run', job.jobsFile], { DARKROOM_TEST_KEY: 'k-123456' });
    expect(r.code).toBe(2);
    const line = expectOneLine(r.stderr);
    expect(line).toContain('jobs.yaml');
    expect(line).toContain('steps.0.capability');
    expect(line).toMatch(/expected one of .*enhance/);
  });

  it('names a missing input folder', async () => {
    writeFileSync(job.jobsFile, original.replace('dir: ./photos', 'dir: ./no-such-folder'));
    const r = await runCli(['run', job.jobsFile], { DARKROOM_TEST_KEY: 'k-123456' });
    expect(r.code).toBe(2);
    expect(expectOneLine(r.stderr)).toMatch(/input\.dir: expected an existing folder, got .*no-such-folder/);
  });

  it('names the unset key variable', async () => {
    writeFileSync(job.jobsFile, original);
    const r = await runCli(['run', job.jobsFile], {});
    expect(r.code).toBe(2);
    expect(expectOneLine(r.stderr)).toMatch(/service\.apiKeyEnv: environment variable DARKROOM_TEST_KEY is not set/);
  });

  it('refuses an unknown command or option with usage exit 2', async () => {
    const r = await runCli(['frobnicate']);
    expect(r.code).toBe(2);
  });
});
