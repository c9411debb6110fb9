import { existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { afterEach, describe, expect, it } from 'vitest';
import { fingerprintKey } from '../../src/spec/key.js';
import { makeJob, writePhoto } from '../helpers/job.js';
import { pixelPrint } from '../helpers/metadata.js';
import { SIM_KEY, simulate } from '../helpers/simulate.js';
import { sourceIdOf } from './helpers.js';

/**
 * Issue 4, point 7: bad input is refused before any call is spent — not an image by its
 * bytes, empty, truncated, too large — each recorded as skipped with its reason. Names
 * with spaces, unicode and quotes work; symlink loops end; an output folder inside the
 * input folder is not read back; one file reached by two names is paid for once.
 * (Who owns which name is src/inputs/identity.ts's business: here only that it is one create.)
 */

const cleanups: (() => void)[] = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

const GOOD = [`it's "quoted" photo.jpg`, 'café ünïcödé 写真.png', 'a b/c d.webp', 'plain.jpg'];

describe('inputs', () => {
  it('bad ones are skipped with their reason before any call; odd names work; loops end; the output folder is not read back', async () => {
    const job = await makeJob({
      photos: 0,
      steps: [{ capability: 'enhance' }],
      // Inside the input folder, and with glob characters in its name.
      extra: { output: { dir: './photos/restored [v2]' }, limits: { maxUploadBytes: 60_000 } },
    });
    cleanups.push(job.cleanup);
    const inDir = job.inputDir;
    for (const [i, rel] of GOOD.entries()) {
      await writePhoto(path.join(inDir, rel), i, rel.endsWith('.png') ? 'png' : rel.endsWith('.webp') ? 'webp' : 'jpeg');
    }
    const jpeg = await sharp({
      create: { width: 300, height: 200, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 40 } },
    })
      .jpeg()
      .toBuffer();
    writeFileSync(path.join(inDir, 'truncated.jpg'), jpeg.subarray(0, Math.floor(jpeg.length * 0.6)));
    writeFileSync(path.join(inDir, 'notes.jpg'), 'these are not the pixels you are looking for\n');
    writeFileSync(path.join(inDir, 'anim.png'), Buffer.concat([Buffer.from('GIF89a'), Buffer.alloc(64)]));
    writeFileSync(path.join(inDir, 'empty.webp'), Buffer.alloc(0));
    const big = await sharp({
      create: { width: 800, height: 800, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 60 } },
    })
      .png()
      .toBuffer();
    expect(big.length).toBeGreaterThan(60_000);
    writeFileSync(path.join(inDir, 'huge.png'), big);
    // Loops: a folder linking to itself, and one linking back to its parent.
    mkdirSync(path.join(inDir, 'sub'), { recursive: true });
    await writePhoto(path.join(inDir, 'sub', 'deeper.jpg'), 9, 'jpeg');
    symlinkSync('.', path.join(inDir, 'sub', 'self'));
    symlinkSync('..', path.join(inDir, 'sub', 'up'));
    // One file reached by a second name.
    symlinkSync('plain.jpg', path.join(inDir, 'zz-alias.jpg'));
    // A result of an earlier run, inside the input folder: not an input.
    await writePhoto(path.join(inDir, 'restored [v2]', 'old-result.jpg'), 7, 'jpeg');

    const r = await simulate({ job });
    const good = [...GOOD, 'sub/deeper.jpg'];
    const byPath = new Map(r.ledger.items.all().map((i) => [i.rel_path, i]));
    expect([...byPath.keys()].filter((p) => p.startsWith('restored'))).toEqual([]);
    // The loops were walked once: no path through `self` or `up` is an input.
    expect([...byPath.keys()].filter((p) => /(^|\/)(self|up)\//.test(p))).toEqual([]);
    for (const rel of good) expect(byPath.get(rel)?.state, rel).toBe('done');

    const reasons = Object.fromEntries(r.result.status.problems.map((p) => [p.path, `${p.state}: ${p.reason}`]));
    expect(reasons['notes.jpg']).toMatch(/^skipped: not a JPG, PNG,? /);
    expect(reasons['anim.png']).toMatch(/^skipped: not a JPG, PNG,? /);
    expect(reasons['empty.webp']).toMatch(/^skipped: empty file/);
    expect(reasons['truncated.jpg']).toMatch(/^skipped: truncated or damaged JPG/);
    expect(reasons['huge.png']).toMatch(/^skipped: .*over limits\.maxUploadBytes \(60000\)/);
    expect(r.result.status).toMatchObject({ total: good.length, done: good.length, skipped: 5, failed: 0 });
    // The second name of plain.jpg is not a second photo to pay for.
    expect(byPath.has('zz-alias.jpg')).toBe(false);
    expect(r.audit.createsPerSource[sourceIdOf(path.join(inDir, 'plain.jpg'))]).toBe(1);

    // Not one call was spent on them: only the good photos were uploaded, once each.
    const k = r.audit.keys[fingerprintKey(SIM_KEY)]!;
    expect(k.uploads).toBe(good.length);
    expect(Object.keys(r.audit.uploadsPerSource).sort()).toEqual(good.map((g) => sourceIdOf(path.join(inDir, g))).sort());

    // Odd names come out under the same names, mirroring the tree.
    const out = path.join(inDir, 'restored [v2]');
    for (const rel of GOOD) {
      const o = path.join(out, rel);
      expect(existsSync(o), o).toBe(true);
      expect(await pixelPrint(o), o).toBe(await pixelPrint(path.join(inDir, rel))); // passthrough processing
    }
  });
});
