import path from 'node:path';
import sharp from 'sharp';
import { afterAll, describe, expect, it } from 'vitest';
import { exifColour, withIccProfile } from '../../src/inputs/colour.js';
import { ADOBE_RGB, rgbProfile } from '../../src/inputs/icc.js';
import { makeJob } from '../helpers/job.js';
import { Exif, storedPixel } from '../helpers/metadata.js';
import { simulate } from '../helpers/simulate.js';

/**
 * A camera JPEG in Adobe RGB that says so only in EXIF (no ICC profile): sent as sRGB, its
 * colours came back wrong. It is converted as an Adobe RGB profile would have it, and its
 * output says sRGB. The service here passes the pixels through, so the output shows what
 * was sent.
 */

const exif = new Exif();
const cleanups: (() => void)[] = [];
afterAll(async () => {
  while (cleanups.length) cleanups.pop()!();
  await exif.end();
});

const GREEN = [60, 170, 70];

describe('a JPEG that says Adobe RGB in its EXIF alone', () => {
  it('is read so by InteropIndex R03, ColorSpace 2, or uncalibrated with Adobe RGB primaries; sRGB wins', async () => {
    const job = await makeJob({ photos: 0 });
    cleanups.push(job.cleanup);
    const file = path.join(job.inputDir, 'x.jpg');
    const exifOf = async (args: string[]) => {
      await sharp({ create: { width: 8, height: 8, channels: 3, background: '#777' } })
        .jpeg()
        .toFile(file);
      if (args.length) await exif.write(file, args);
      return exifColour((await sharp(file).metadata()).exif);
    };
    expect(await exifOf(['-EXIF:InteropIndex=R03', '-EXIF:ColorSpace#=65535'])).toBe('Adobe RGB (EXIF InteropIndex R03)');
    expect(await exifOf(['-EXIF:ColorSpace#=2'])).toBe('Adobe RGB (EXIF ColorSpace 2)');
    expect(await exifOf(['-EXIF:ColorSpace#=65535', '-IFD0:PrimaryChromaticities=0.64 0.33 0.21 0.71 0.15 0.06'])).toMatch(
      /uncalibrated, Adobe RGB primaries/,
    );
    expect(await exifOf(['-EXIF:ColorSpace#=65535', '-IFD0:PrimaryChromaticities=0.64 0.33 0.3 0.6 0.15 0.06'])).toBeNull();
    expect(await exifOf(['-EXIF:InteropIndex=R03', '-EXIF:ColorSpace#=1'])).toBeNull();
    expect(await exifOf(['-EXIF:InteropIndex=R98'])).toBeNull();
  });

  it('is converted as an Adobe RGB profile would have it, and comes back tagged sRGB', async () => {
    const job = await makeJob({ photos: 0, steps: [{ capability: 'restore' }], extra: { output: { dir: './out', metadata: 'all' } } });
    cleanups.push(job.cleanup);
    const file = path.join(job.inputDir, 'camera.jpg');
    await sharp({ create: { width: 32, height: 24, channels: 3, background: { r: GREEN[0]!, g: GREEN[1]!, b: GREEN[2]! } } })
      .jpeg({ quality: 100, chromaSubsampling: '4:4:4' })
      .toFile(file);
    await exif.write(file, ['-EXIF:InteropIndex=R03', '-EXIF:ColorSpace#=65535', '-EXIF:Make=Camera', '-XMP-dc:Title=Field']);
    const stored = await storedPixel(file);
    const { readFileSync } = await import('node:fs');
    // What sharp makes of the same bytes given an Adobe RGB profile: sRGB numbers.
    const want = [
      ...(
        await sharp(withIccProfile(readFileSync(file), rgbProfile(ADOBE_RGB)))
          .raw()
          .toBuffer()
      ).subarray(0, 3),
    ];
    expect(Math.max(...want.map((v, i) => Math.abs(v - stored[i]!)))).toBeGreaterThan(10);
    const r = await simulate({ job, sim: { processing: 'passthrough' } });
    cleanups.push(() => r.ledger.close());
    const item = r.ledger.items.all()[0]!;
    expect(item.state).toBe('done');
    const out = item.output_path!;
    const got = await storedPixel(out);
    got.forEach((v, i) => expect(Math.abs(v - want[i]!), `channel ${i}`).toBeLessThanOrEqual(3));
    const t = await exif.read(out, true);
    expect(t['ExifIFD:ColorSpace']).toBe(1);
    expect(t['InteropIFD:InteropIndex']).toBeUndefined();
    expect(t['ICC_Profile:ProfileDescription']).toBeUndefined();
    expect(t['XMP-dc:Title']).toBe('Field');
  }, 60_000);
});
