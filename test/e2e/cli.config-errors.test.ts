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
    expect(line).toContain('step 1: capability');
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

/** The mistakes of a first job file: each one line that says where, in the words the rest uses, and what was meant. */
describe('job-file mistakes that are easy to find', () => {
  let job: Awaited<ReturnType<typeof makeJob>>;
  const yaml = (steps: string, extra = '') =>
    `service: { baseUrl: "http://127.0.0.1:9", apiKeyEnv: DARKROOM_TEST_KEY }\ninput: { dir: ./photos }\noutput: { dir: ./out }\n${steps}${extra}`;
  beforeAll(async () => {
    job = await makeJob({ photos: 1 });
  });
  afterAll(() => job.cleanup());

  const lineOf = async (text: string): Promise<string> => {
    writeFileSync(job.jobsFile, text);
    const r = await runCli(['plan', job.jobsFile], { DARKROOM_TEST_KEY: 'k-123456' });
    expect(r.code).toBe(2);
    const lines = r.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    return lines[0]!;
  };

  it.each([
    [
      'a YAML syntax error: its line and column',
      yaml('steps:\n  - capability: restore\n    mode: general: portrait\n'),
      /jobs\.yaml: line 6, column 11: not valid YAML: Nested mappings are not allowed/,
    ],
    [
      'a misspelt key: named, with what was meant (not "steps: missing")',
      yaml('stpes:\n  - capability: restore\n'),
      /jobs\.yaml: stpes: unknown key; did you mean steps\?$/,
    ],
    [
      'an unknown key in a step: the step as the rest counts them, and what was meant',
      yaml('steps:\n  - capability: restore\n  - capability: upscale\n    resoluton: 4K\n'),
      /jobs\.yaml: step 2: resoluton: unknown key; did you mean resolution\?$/,
    ],
    [
      'a bad value in a step: the step from 1',
      yaml('steps:\n  - capability: sharpen\n'),
      /jobs\.yaml: step 1: capability: expected one of .*enhance/,
    ],
    [
      'an unknown key of a section, with what was meant',
      yaml('steps: [{ capability: restore }]\n', 'limits: { calsPerMinute: 50 }\n'),
      /jobs\.yaml: limits\.calsPerMinute: unknown key; did you mean callsPerMinute\?$/,
    ],
  ])('%s', async (_, text, expected) => {
    expect(await lineOf(text)).toMatch(expected);
  });
});
