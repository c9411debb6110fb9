import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { runCli } from '../helpers/cli.js';
import { makeJob } from '../helpers/job.js';

/**
 * Every step option is checked before any call: a bad one is one line on stderr naming the
 * file, the step and the option, with exit code 2, and no ledger is even created. The base
 * URL points at a port nothing listens on, so a call would fail differently.
 */
describe('darkroom run with a bad pipeline option', () => {
  let job: Awaited<ReturnType<typeof makeJob>>;
  beforeAll(async () => {
    job = await makeJob({ photos: 1, baseUrl: 'http://127.0.0.1:9' });
  });
  afterAll(() => job.cleanup());

  const write = (steps: unknown[], extra: Record<string, unknown> = {}) =>
    writeFileSync(
      job.jobsFile,
      stringify({
        service: { baseUrl: 'http://127.0.0.1:9', apiKeyEnv: 'DARKROOM_TEST_KEY' },
        input: { dir: './photos' },
        output: { dir: './out' },
        steps,
        ledger: './state/darkroom.db',
        ...extra,
      }),
    );

  it.each([
    [
      [{ capability: 'restore' }, { capability: 'colorize', mode: 'portrait' }],
      /jobs\.yaml: step 2: mode: colorize accepts no mode \(only enhance, unblur, upscale do\), got "portrait"/,
    ],
    [
      [{ capability: 'restore' }, { capability: 'colorize' }, { capability: 'upscale', resolution: '16K' }],
      /step 3: resolution: expected one of "4K"\|"8K", got "16K"/,
    ],
    [[{ capability: 'enhance', mode: 'photo' }], /step 1: mode: expected one of "general"\|"graphics"\|"portrait"\|"text", got "photo"/],
    [[{ capability: 'image2image', prompt: 'warm' }], /step 1: style: image2image requires a style/],
    [[{ capability: 'remove-background', prompt: 'cut' }], /step 1: prompt: only image2image accepts prompt/],
    [[{ capability: 'upscale', size: '4K' }], /step 1: size: unknown key/],
  ])('%j → exit 2 naming the step and option', async (steps, line) => {
    write(steps);
    const r = await runCli(['run', job.jobsFile], { DARKROOM_TEST_KEY: 'k-123456' });
    expect(r.code).toBe(2);
    const lines = r.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(line);
    expect(existsSync(job.ledgerFile)).toBe(false);
  });

  it('names a bad line of the URL list, before any call', async () => {
    writeFileSync(path.join(job.dir, 'list.txt'), '# archive\nhttps://x.test/1.jpg\nfile:///etc/passwd\n');
    write([{ capability: 'restore' }], { input: { dir: './photos', urls: './list.txt' } });
    const r = await runCli(['run', job.jobsFile], { DARKROOM_TEST_KEY: 'k-123456' });
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n').at(-1)).toBe('darkroom: list.txt: line 3: expected an http(s) image URL, got "file:///etc/passwd"');
  });

  it('names a bad output pattern and an unknown businessType key', async () => {
    write([{ capability: 'restore' }], { output: { dir: './out', pattern: '{name}' } });
    let r = await runCli(['run', job.jobsFile], { DARKROOM_TEST_KEY: 'k-123456' });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/output\.pattern: must contain \{ext\}/);
    write([{ capability: 'restore' }], {
      service: { baseUrl: 'http://127.0.0.1:9', apiKeyEnv: 'DARKROOM_TEST_KEY', businessTypes: { upscale: 'UP' } },
    });
    r = await runCli(['run', job.jobsFile], { DARKROOM_TEST_KEY: 'k-123456' });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/service\.businessTypes\.upscale: unknown key/);
  });
});
