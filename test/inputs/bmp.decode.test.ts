import { describe, expect, it } from 'vitest';
import { bmpSize, decodeBmp } from '../../src/inputs/bmp.js';
import { blocksRaw, encodeBmp, testRaw } from './images.js';
import { InputError } from '../../src/errors.js';

/** sharp reads no BMP, so darkroom decodes them itself; each variant must give back the pixels it was made of. */
describe('decodeBmp', () => {
  const w = 13; // odd, so rows carry padding
  const h = 7;

  it.each([
    ['24-bit, bottom-up', { bpp: 24 as const }],
    ['24-bit, top-down', { bpp: 24 as const, topDown: true }],
    ['32-bit with an unused fourth byte', { bpp: 32 as const }],
  ])('reads %s exactly', (_, opts) => {
    const raw = testRaw(w, h);
    const d = decodeBmp(encodeBmp(raw, w, h, 3, opts));
    expect(d).toMatchObject({ width: w, height: h, channels: opts.bpp === 32 ? 4 : 3 });
    if (d.channels === 3) expect(d.data.equals(raw)).toBe(true);
  });

  it('treats a plain 32-bit BMP whose fourth byte is 0 everywhere as opaque RGB', () => {
    const raw = testRaw(w, h);
    const bytes = encodeBmp(raw, w, h, 3, { bpp: 32 });
    // make every "unused" byte 0, as most writers do
    const offset = bytes.readUInt32LE(10);
    for (let i = offset + 3; i < bytes.length; i += 4) bytes[i] = 0;
    const d = decodeBmp(bytes);
    expect(d.channels).toBe(3);
    expect(d.data.equals(raw)).toBe(true);
  });

  it('reads 32-bit BITFIELDS with an alpha mask, keeping the alpha', () => {
    const raw = testRaw(w, h, 4);
    const d = decodeBmp(encodeBmp(raw, w, h, 4, { alpha: true }));
    expect(d.channels).toBe(4);
    expect(d.data.equals(raw)).toBe(true);
  });

  it.each([1, 4, 8] as const)('reads %i-bit palette images', (bpp) => {
    const raw = blocksRaw(w, h, bpp === 1 ? 2 : 4);
    const d = decodeBmp(encodeBmp(raw, w, h, 3, { bpp }));
    expect(d.data.equals(raw)).toBe(true);
  });

  it('reads RLE8', () => {
    const raw = blocksRaw(w, h);
    const d = decodeBmp(encodeBmp(raw, w, h, 3, { rle8: true }));
    expect(d.data.equals(raw)).toBe(true);
  });

  it('reads 16-bit 5-5-5 and 5-6-5 within their precision', () => {
    const raw = testRaw(w, h);
    for (const opts of [{ bpp: 16 as const }, { bpp: 16 as const, rgb565: true }]) {
      const d = decodeBmp(encodeBmp(raw, w, h, 3, opts));
      for (let i = 0; i < raw.length; i++) expect(Math.abs(d.data[i]! - raw[i]!)).toBeLessThanOrEqual(8);
    }
  });

  it('tells the size from the first bytes alone', () => {
    const bytes = encodeBmp(testRaw(300, 200), 300, 200, 3);
    expect(bmpSize(bytes.subarray(0, 256))).toEqual({ width: 300, height: 200 });
  });

  it('refuses what it cannot read with a reason, never a crash', () => {
    const bytes = encodeBmp(testRaw(w, h), w, h, 3);
    const jpegInside = Buffer.from(bytes);
    jpegInside.writeUInt32LE(4, 30);
    expect(() => decodeBmp(jpegInside)).toThrow(/embedded JPEG/);
    expect(() => decodeBmp(bytes.subarray(0, bytes.length - 40))).toThrow(InputError);
    const huge = Buffer.from(bytes);
    huge.writeInt32LE(100_000, 18);
    huge.writeInt32LE(100_000, 22);
    expect(() => decodeBmp(huge)).toThrow(/too large/);
    expect(() => decodeBmp(Buffer.from('BMxx'))).toThrow(InputError);
  });
});
