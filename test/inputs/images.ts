import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';

/** Archive-format fixtures, made on the fly so every test owns its files. */

/** A picture with structure (a gradient and a block) so rotation and scaling show in the pixels. */
export function testRaw(width: number, height: number, channels: 3 | 4 = 3): Buffer {
  const data = Buffer.alloc(width * height * channels);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * channels;
      const block = x < width / 3 && y < height / 3;
      data[i] = block ? 250 : Math.round((x / Math.max(1, width - 1)) * 200);
      data[i + 1] = block ? 20 : Math.round((y / Math.max(1, height - 1)) * 200);
      data[i + 2] = block ? 20 : 90;
      if (channels === 4) data[i + 3] = x >= width - 2 ? 0 : 255;
    }
  }
  return data;
}

export async function writeTiff(
  file: string,
  width: number,
  height: number,
  opts: { alpha?: boolean; sixteen?: boolean } = {},
): Promise<void> {
  mkdirSync(path.dirname(file), { recursive: true });
  let img = sharp(testRaw(width, height, opts.alpha ? 4 : 3), { raw: { width, height, channels: opts.alpha ? 4 : 3 } });
  if (opts.sixteen) img = img.toColourspace('rgb16');
  await img.tiff({ compression: 'lzw' }).toFile(file);
}

export async function write16BitPng(file: string, width: number, height: number): Promise<void> {
  mkdirSync(path.dirname(file), { recursive: true });
  await sharp(testRaw(width, height), { raw: { width, height, channels: 3 } })
    .toColourspace('rgb16')
    .png()
    .toFile(file);
}

/** A JPEG whose pixels are stored sideways, with EXIF orientation 6 ("rotate 90° clockwise to view"). */
export async function writeRotatedJpeg(file: string, storedWidth: number, storedHeight: number): Promise<void> {
  mkdirSync(path.dirname(file), { recursive: true });
  await sharp(testRaw(storedWidth, storedHeight), { raw: { width: storedWidth, height: storedHeight, channels: 3 } })
    .withMetadata({ orientation: 6 })
    .jpeg({ quality: 95 })
    .toFile(file);
}

export interface BmpOptions {
  readonly bpp?: 1 | 4 | 8 | 16 | 24 | 32;
  readonly topDown?: boolean;
  /** 32-bit with BITFIELDS and an alpha mask (a V4 header). */
  readonly alpha?: boolean;
  /** 16-bit 5-6-5 (BITFIELDS). */
  readonly rgb565?: boolean;
  /** 8-bit RLE8 (palette of the distinct colours). */
  readonly rle8?: boolean;
}

/**
 * A BMP of raw RGB(A) pixels, written the way common tools write them. For 1/4/8 bits the
 * palette is built from the image's colours (the image must have few enough).
 */
export function encodeBmp(raw: Buffer, width: number, height: number, channels: 3 | 4, opts: BmpOptions = {}): Buffer {
  const bpp = opts.rle8 ? 8 : opts.alpha ? 32 : (opts.bpp ?? 24);
  const px = (x: number, y: number) => {
    const i = (y * width + x) * channels;
    return [raw[i]!, raw[i + 1]!, raw[i + 2]!, channels === 4 ? raw[i + 3]! : 255] as const;
  };
  const palette: number[] = [];
  const indexOf = new Map<number, number>();
  if (bpp <= 8) {
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        const [r, g, b] = px(x, y);
        const key = (r << 16) | (g << 8) | b;
        if (!indexOf.has(key)) {
          indexOf.set(key, palette.length);
          palette.push(key);
        }
      }
    }
    if (palette.length > 1 << bpp) throw new Error(`too many colours (${palette.length}) for ${bpp} bits`);
  }
  const v4 = opts.alpha === true;
  const bitfields = v4 || opts.rgb565 === true;
  const dib = v4 ? 108 : 40;
  const maskBytes = bitfields && !v4 ? 12 : 0;
  const paletteBytes = palette.length * 4;
  const stride = Math.floor((bpp * width + 31) / 32) * 4;
  const rows: Buffer[] = [];
  for (let yy = 0; yy < height; yy++) {
    const y = opts.topDown ? yy : height - 1 - yy;
    const row = Buffer.alloc(stride);
    for (let x = 0; x < width; x++) {
      const [r, g, b, a] = px(x, y);
      if (bpp === 24) {
        row[x * 3] = b;
        row[x * 3 + 1] = g;
        row[x * 3 + 2] = r;
      } else if (bpp === 32) {
        row.writeUInt32LE(((a << 24) | (r << 16) | (g << 8) | b) >>> 0, x * 4);
      } else if (bpp === 16) {
        const v = opts.rgb565 ? ((r >> 3) << 11) | ((g >> 2) << 5) | (b >> 3) : ((r >> 3) << 10) | ((g >> 3) << 5) | (b >> 3);
        row.writeUInt16LE(v, x * 2);
      } else {
        const idx = indexOf.get((r << 16) | (g << 8) | b)!;
        const perByte = 8 / bpp;
        const shift = 8 - bpp * ((x % perByte) + 1);
        row[Math.floor(x / perByte)] = row[Math.floor(x / perByte)]! | (idx << shift);
      }
    }
    rows.push(row);
  }
  let pixels = Buffer.concat(rows);
  if (opts.rle8) {
    // Encoded runs only (count, index), an end-of-line after each row, end-of-bitmap last.
    const out: number[] = [];
    for (let yy = 0; yy < height; yy++) {
      const row = rows[yy]!;
      let x = 0;
      while (x < width) {
        let n = 1;
        while (x + n < width && n < 255 && row[x + n] === row[x]) n++;
        out.push(n, row[x]!);
        x += n;
      }
      out.push(0, 0);
    }
    out.push(0, 1);
    pixels = Buffer.from(out);
  }
  const offset = 14 + dib + maskBytes + paletteBytes;
  const buf = Buffer.alloc(offset + pixels.length);
  buf.write('BM', 0, 'latin1');
  buf.writeUInt32LE(buf.length, 2);
  buf.writeUInt32LE(offset, 10);
  buf.writeUInt32LE(dib, 14);
  buf.writeInt32LE(width, 18);
  buf.writeInt32LE(opts.topDown ? -height : height, 22);
  buf.writeUInt16LE(1, 26);
  buf.writeUInt16LE(bpp, 28);
  buf.writeUInt32LE(opts.rle8 ? 1 : bitfields ? 3 : 0, 30);
  buf.writeUInt32LE(pixels.length, 34);
  buf.writeUInt32LE(palette.length, 46);
  if (v4) {
    buf.writeUInt32LE(0x00ff0000, 54);
    buf.writeUInt32LE(0x0000ff00, 58);
    buf.writeUInt32LE(0x000000ff, 62);
    buf.writeUInt32LE(0xff000000, 66);
  } else if (opts.rgb565) {
    buf.writeUInt32LE(0xf800, 54);
    buf.writeUInt32LE(0x07e0, 58);
    buf.writeUInt32LE(0x001f, 62);
  }
  palette.forEach((c, i) => {
    const at = 14 + dib + maskBytes + i * 4;
    buf[at] = c & 0xff;
    buf[at + 1] = (c >> 8) & 0xff;
    buf[at + 2] = (c >> 16) & 0xff;
  });
  pixels.copy(buf, offset);
  return buf;
}

export function writeBmp(file: string, width: number, height: number, opts: BmpOptions = {}): Buffer {
  mkdirSync(path.dirname(file), { recursive: true });
  const channels = opts.alpha ? 4 : 3;
  const bytes = encodeBmp(testRaw(width, height, channels), width, height, channels, opts);
  writeFileSync(file, bytes);
  return bytes;
}

/** Four flat colours in quadrants: few enough for a 1-, 4- or 8-bit palette. */
export function blocksRaw(width: number, height: number, colours: 2 | 4 = 4): Buffer {
  const pal =
    colours === 2
      ? [
          [0, 0, 0],
          [255, 255, 255],
        ]
      : [
          [200, 30, 30],
          [30, 200, 30],
          [30, 30, 200],
          [240, 240, 240],
        ];
  const data = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const q = colours === 2 ? (x + y) % 2 : (x < width / 2 ? 0 : 1) + (y < height / 2 ? 0 : 2);
      data.set(pal[q]!, (y * width + x) * 3);
    }
  }
  return data;
}
