import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Previews } from '../../src/review/previews.js';
import { makeTempDir } from '../helpers/job.js';

/**
 * What the review page's browser gets of a file: an input (TIFF, 16-bit, CMYK, huge, with
 * transparency) never itself, always a browser-ready preview made on first need and served
 * from the cache after; an output as it is when a browser shows it well.
 */
describe('review previews', () => {
  let dir: string;
  let previews: Previews;
  const cache = () => path.join(dir, 'cache');
  const file = (name: string) => path.join(dir, name);

  beforeAll(async () => {
    dir = makeTempDir('darkroom-previews-');
    previews = new Previews(cache());
    const gradient = (w: number, h: number) =>
      sharp({ create: { width: w, height: h, channels: 3, background: { r: 180, g: 120, b: 60 } } }).png();
    // 16-bit RGB TIFF, as a flatbed scanner writes a master.
    await sharp(await gradient(640, 400).toBuffer())
      .toColourspace('rgb16')
      .tiff({ compression: 'none' })
      .toFile(file('master16.tif'));
    await sharp(await gradient(300, 200).toBuffer())
      .toColourspace('cmyk')
      .jpeg()
      .toFile(file('cmyk.jpg'));
    await sharp({ create: { width: 9000, height: 300, channels: 3, background: '#345' } })
      .jpeg()
      .toFile(file('panorama.jpg'));
    await sharp({ create: { width: 200, height: 100, channels: 4, background: { r: 0, g: 0, b: 0, alpha: 0.5 } } })
      .png()
      .toFile(file('cutout.png'));
    await gradient(320, 200).jpeg().toFile(file('output.jpg'));
  });

  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('a 16-bit TIFF master: an 8-bit sRGB JPEG preview at full size, made once, then from the cache', async () => {
    const first = await previews.image(file('master16.tif'), 'input');
    expect(first).toMatchObject({ type: 'image/jpeg', made: true });
    expect(path.dirname(first.file)).toBe(cache());
    const meta = await sharp(first.file).metadata();
    expect(meta).toMatchObject({ format: 'jpeg', width: 640, height: 400, depth: 'uchar', space: 'srgb' });
    const again = await previews.image(file('master16.tif'), 'input');
    expect(again).toEqual({ ...first, made: false });
  });

  it('CMYK becomes sRGB; a huge input is scaled to 8192 px a side; transparency stays (PNG)', async () => {
    const cmyk = await previews.image(file('cmyk.jpg'), 'input');
    expect((await sharp(cmyk.file).metadata()).space).toBe('srgb');
    const pano = await previews.image(file('panorama.jpg'), 'input');
    expect(await sharp(pano.file).metadata()).toMatchObject({ width: 8192 });
    const cut = await previews.image(file('cutout.png'), 'input');
    expect(cut.type).toBe('image/png');
    expect((await sharp(cut.file).metadata()).hasAlpha).toBe(true);
  });

  it('never the input itself, even a browser-ready JPEG; an output as it is; a missing file or not an image is said', async () => {
    const input = await previews.image(file('output.jpg'), 'input');
    expect(input.file).not.toBe(file('output.jpg'));
    const output = await previews.image(file('output.jpg'), 'output');
    expect(output).toEqual({ file: file('output.jpg'), type: 'image/jpeg', made: false });
    // A CMYK output is previewed too: a browser would show it wrong.
    expect((await previews.image(file('cmyk.jpg'), 'output')).file).not.toBe(file('cmyk.jpg'));
    await expect(previews.image(file('nothing.jpg'), 'input')).rejects.toMatchObject({ status: 404 });
    writeFileSync(file('notes.jpg'), 'not an image');
    await expect(previews.image(file('notes.jpg'), 'input')).rejects.toMatchObject({ status: 422 });
    // Only whole previews in the cache: no temp file left.
    expect(readdirSync(cache()).every((f) => /^[0-9a-f]{32}\.(jpg|png)$/.test(f))).toBe(true);
    expect(readFileSync(input.file).subarray(0, 2)).toEqual(Buffer.from([0xff, 0xd8]));
  });
});
