import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { fingerprintKey } from '../../src/spec/key.js';
import { makeJob, writePhoto } from '../helpers/job.js';
import { SIM_KEY, simulate } from '../helpers/simulate.js';
import { sourceIdOf } from '../robust/helpers.js';

/**
 * Issue 12, point 8: an output path that cannot be written is found before the upload, not
 * after the photo was paid for: a name that would leave the output folder (by its name, or
 * through a symbolic link in the output folder), a file name over the file system's 255
 * bytes, and a path already taken by a file this ledger did not write. Each is skipped with
 * its reason at 0 calls; the photos beside them are done.
 */

const cleanups: (() => void)[] = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

describe('output paths checked before any call', () => {
  it('skips names that escape, are too long or are taken, before their upload', async () => {
    const job = await makeJob({
      photos: 0,
      steps: [{ capability: 'enhance' }],
      baseUrl: 'http://sim.invalid',
      // {name} of `...jpg` is `..`: with this pattern its output would be `<output.dir>/../enhance.jpg`.
      extra: { input: { dir: './photos', hidden: true }, output: { dir: './out', pattern: '{name}/{step}.{ext}' } },
    });
    cleanups.push(job.cleanup);
    const inp = (rel: string) => path.join(job.inputDir, rel);
    await writePhoto(inp('good.jpg'), 1);
    await writePhoto(inp('album/good.png'), 2, 'png');
    await writePhoto(inp('...jpg'), 3);
    // The longest name a file can have (255 bytes): as a folder of the pattern ({name}/) it fits, so it goes.
    const long = `${'é'.repeat(125)}x.jpg`;
    await writePhoto(inp(long), 4);
    await writePhoto(inp('taken.jpg'), 5);
    await writePhoto(inp('linked/photo.jpg'), 6);
    // Someone else's file where taken.jpg's output would go.
    mkdirSync(path.join(job.outputDir, 'taken'), { recursive: true });
    writeFileSync(path.join(job.outputDir, 'taken', 'enhance.jpg'), "an operator's own file");
    // A folder of the output tree that is a link to somewhere else.
    const elsewhere = mkdtempSync(path.join(tmpdir(), 'darkroom-elsewhere-'));
    cleanups.push(() => rmSync(elsewhere, { recursive: true, force: true }));
    mkdirSync(path.join(job.outputDir, 'linked'), { recursive: true });
    symlinkSync(elsewhere, path.join(job.outputDir, 'linked', 'photo'));

    const r = await simulate({ job });
    const reasons = Object.fromEntries(r.result.status.problems.map((p) => [p.path, `${p.state}: ${p.reason}`]));
    expect(reasons['...jpg']).toMatch(/^skipped: output path for \.\.\.jpg would leave the output folder/);
    expect(reasons['taken.jpg']).toMatch(
      /^skipped: .*taken\/enhance\.jpg already exists and was not written by this ledger; move it away and run again/,
    );
    expect(reasons['linked/photo.jpg']).toMatch(/^skipped: .*linked\/photo leads outside the output folder .*through a symbolic link/);
    expect(reasons[long]).toBeUndefined();
    expect(r.result.status).toMatchObject({ total: 3, done: 3, skipped: 3 });

    const k = r.audit.keys[fingerprintKey(SIM_KEY)]!;
    expect(k.uploads).toBe(3);
    for (const rel of ['...jpg', 'taken.jpg', 'linked/photo.jpg']) {
      expect(r.audit.uploadsPerSource[sourceIdOf(inp(rel))], rel).toBeUndefined();
      expect(r.audit.createsPerSource[sourceIdOf(inp(rel))], rel).toBeUndefined();
    }
    expect(readdirSync(elsewhere)).toEqual([]);
  });

  it('skips a photo whose output file name would be over 255 bytes, before its upload', async () => {
    const job = await makeJob({
      photos: 0,
      steps: [{ capability: 'enhance' }],
      baseUrl: 'http://sim.invalid',
      extra: { output: { dir: './out', pattern: '{name}.{step}.{ext}' } },
    });
    cleanups.push(job.cleanup);
    const inp = (rel: string) => path.join(job.inputDir, rel);
    const long = `${'é'.repeat(120)}${'x'.repeat(10)}.jpg`; // 254 bytes; its output `<name>.enhance.jpg` would be 262
    await writePhoto(inp(long), 1);
    await writePhoto(inp('short.jpg'), 2);
    const r = await simulate({ job });
    expect(r.result.status.problems.map((p) => `${p.path} ${p.state}: ${p.reason}`)).toEqual([
      `${long} skipped: output file name ${'é'.repeat(120)}${'x'.repeat(10)}.enhance.jpg would be 262 bytes, over the file system's 255; rename the input or shorten output.pattern`,
    ]);
    expect(r.result.status).toMatchObject({ total: 1, done: 1, skipped: 1 });
    expect(r.audit.keys[fingerprintKey(SIM_KEY)]!.uploads).toBe(1);
    expect(r.audit.uploadsPerSource[sourceIdOf(inp(long))]).toBeUndefined();
  });
});

describe('URL inputs: output paths checked before their first create', () => {
  it('skips a URL line whose output name is too long or taken, before any create (a URL input has no upload)', async () => {
    const job = await makeJob({
      photos: 0,
      steps: [{ capability: 'enhance' }],
      baseUrl: 'http://sim.invalid',
      // A name column is cut to 200 bytes (safeName.ts); the pattern's suffix then takes it past 255.
      extra: {
        input: { dir: './photos', urls: './list.csv' },
        output: { dir: './out', pattern: '{name}.{step}-restored-and-colourised-for-the-family-archive.{ext}' },
      },
    });
    cleanups.push(job.cleanup);
    await writePhoto(path.join(job.inputDir, 'good.jpg'), 1);
    const long = '写'.repeat(100); // 300 bytes: a name column may be as long as it likes
    const cut = '写'.repeat(66); // 198 bytes: what cleanName keeps
    writeFileSync(path.join(job.dir, 'list.csv'), `url,name\nhttps://images.example/1.jpg,${long}\nhttps://images.example/2.jpg,taken\n`);
    mkdirSync(job.outputDir, { recursive: true });
    writeFileSync(path.join(job.outputDir, 'taken.enhance-restored-and-colourised-for-the-family-archive.jpg'), "an operator's own file");

    const r = await simulate({ job });
    const reasons = Object.fromEntries(r.result.status.problems.map((p) => [p.path, `${p.state}: ${p.reason}`]));
    expect(reasons['https://images.example/1.jpg']).toBe(
      `skipped: output file name ${cut}.enhance-restored-and-colourised-for-the-family-archive.jpg would be 257 bytes, over the file system's 255; rename the input or shorten output.pattern`,
    );
    expect(reasons['https://images.example/2.jpg']).toMatch(
      /^skipped: .*\/out\/taken\.enhance-restored-and-colourised-for-the-family-archive\.jpg already exists and was not written by this ledger/,
    );
    expect(r.result.status).toMatchObject({ total: 1, done: 1, skipped: 2 });
    const k = r.audit.keys[fingerprintKey(SIM_KEY)]!;
    expect(k.creates).toBe(1);
  });
});
