import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { tinyPng } from '../../bench/photos.js';
import { headerFacts } from '../../src/inputs/headers.js';
import { testRaw } from './images.js';

/** What sharp says of the same bytes, in headerFacts' terms. */
async function bySharp(bytes: Buffer) {
  const m = await sharp(bytes).metadata();
  return {
    width: m.width,
    height: m.height,
    orientation: m.orientation ?? 1,
    sixteenBit: m.depth === 'ushort' || m.depth === 'short' || (m.bitsPerSample ?? 8) > 8,
  };
}

const raw = (w: number, h: number, channels: 3 | 4 = 3) => sharp(testRaw(w, h, channels), { raw: { width: w, height: h, channels } });

describe('headerFacts (discovery without sharp)', () => {
  it('reads plain PNGs and JPEGs exactly as sharp does', async () => {
    const cases: Record<string, Buffer> = {
      'png rgb': await raw(40, 30).png().toBuffer(),
      'png rgba': await raw(41, 29, 4).png().toBuffer(),
      'png 16-bit': await raw(40, 30).toColourspace('rgb16').png().toBuffer(),
      'png grey': await raw(17, 5).greyscale().png().toBuffer(),
      'png palette': await raw(40, 30).png({ palette: true }).toBuffer(),
      'png interlaced': await raw(40, 30).png({ progressive: true }).toBuffer(),
      'png bench photo': tinyPng(7),
      jpeg: await raw(64, 48).jpeg().toBuffer(),
      'jpeg progressive': await raw(64, 48).jpeg({ progressive: true }).toBuffer(),
      'jpeg grey': await raw(33, 21).greyscale().jpeg().toBuffer(),
      'jpeg exif, no orientation': await raw(64, 48)
        .withExif({ IFD0: { Copyright: 'darkroom' } })
        .jpeg()
        .toBuffer(),
      ...Object.fromEntries(
        await Promise.all(
          [2, 3, 5, 6, 7, 8].map(async (o) => [
            `jpeg orientation ${o}`,
            await raw(40, 30).withMetadata({ orientation: o }).jpeg().toBuffer(),
          ]),
        ),
      ),
    };
    for (const [name, bytes] of Object.entries(cases)) {
      const mine = headerFacts(bytes);
      expect(mine, name).not.toBeNull();
      expect(mine, name).toEqual(await bySharp(bytes));
    }
  });

  it('leaves to sharp what it does not read for sure', async () => {
    const jpeg = await raw(64, 48).withMetadata({ orientation: 6 }).jpeg().toBuffer();
    const png = await raw(40, 30).png().toBuffer();
    expect(headerFacts(jpeg.subarray(0, 40))).toBeNull(); // cut before the frame header
    expect(headerFacts(png.subarray(0, 40))).toBeNull(); // cut before the pixels
    const badCrc = Buffer.from(png);
    badCrc[29] = badCrc[29]! ^ 0xff;
    expect(headerFacts(badCrc)).toBeNull();
    expect(headerFacts(await raw(40, 30).withMetadata({ orientation: 6 }).png().toBuffer())).toBeNull(); // eXIf
    expect(headerFacts(await raw(40, 30).jpeg().toColourspace('cmyk').toBuffer())).toBeNull();
    expect(headerFacts(await raw(40, 30).webp().toBuffer())).toBeNull();
    // An embedded colour profile: sharp reads it, to tell whether the photo must be converted to sRGB.
    expect(headerFacts(await raw(64, 48).withIccProfile('p3').jpeg().toBuffer())).toBeNull();
    expect(headerFacts(await raw(64, 48).withIccProfile('p3').png().toBuffer())).toBeNull();
    expect(headerFacts(Buffer.from([0xff, 0xd8, 0xff, 0xd9]))).toBeNull();
  });
});
