/**
 * A BMP reader, because sharp's prebuilt libvips reads no BMP at all (its loader would come
 * from ImageMagick, which sharp does not bundle). It covers what scanners and old archive
 * software write: the core, info and V2–V5 headers; 1, 4 and 8 bits with a palette; 16,
 * 24 and 32 bits, plain or with bit masks; RLE8 and RLE4; bottom-up and top-down rows.
 * Embedded JPEG or PNG (compression 4 and 5) is refused with a reason.
 */
import { InputError } from '../errors.js';

export interface DecodedBmp {
  readonly width: number;
  readonly height: number;
  /** 3 (RGB) or 4 (RGBA), rows top to bottom. */
  readonly channels: 3 | 4;
  readonly data: Buffer;
}

/** Far beyond any scan, and a guard against a header that claims billions of pixels. */
const MAX_PIXELS = 1_000_000_000;

export function isBmp(head: Uint8Array): boolean {
  return head.length >= 14 && head[0] === 0x42 && head[1] === 0x4d;
}

/** Width and height from the first bytes alone (for discovery, without decoding); throws InputError. */
export function bmpSize(head: Buffer): { width: number; height: number } {
  const h = readHeader(head, false);
  return { width: h.width, height: h.height };
}

interface Header {
  width: number;
  height: number;
  topDown: boolean;
  bpp: number;
  compression: number;
  pixelOffset: number;
  masks: [number, number, number, number] | null;
  palette: Array<[number, number, number]>;
}

function readHeader(buf: Buffer, whole = true): Header {
  if (!isBmp(buf) || buf.length < 26) throw new InputError('not a BMP file');
  const pixelOffset = buf.readUInt32LE(10);
  const dib = buf.readUInt32LE(14);
  let width: number;
  let rawHeight: number;
  let bpp: number;
  let compression = 0;
  let colorsUsed = 0;
  let masks: [number, number, number, number] | null = null;
  let paletteAt: number;
  let paletteEntry: number;
  if (dib === 12) {
    width = buf.readUInt16LE(18);
    rawHeight = buf.readInt16LE(20);
    bpp = buf.readUInt16LE(24);
    paletteAt = 14 + 12;
    paletteEntry = 3;
  } else if (dib >= 40 && buf.length >= 14 + 40) {
    width = buf.readInt32LE(18);
    rawHeight = buf.readInt32LE(22);
    bpp = buf.readUInt16LE(28);
    compression = buf.readUInt32LE(30);
    colorsUsed = buf.readUInt32LE(46);
    paletteAt = 14 + dib;
    paletteEntry = 4;
    if (compression === 3 || compression === 6) {
      if (dib >= 52) {
        masks = [buf.readUInt32LE(54), buf.readUInt32LE(58), buf.readUInt32LE(62), dib >= 56 ? buf.readUInt32LE(66) : 0];
      } else {
        // The masks follow a 40-byte header: three (BITFIELDS) or four (ALPHABITFIELDS).
        const n = compression === 6 ? 4 : 3;
        if (buf.length < 54 + 4 * n) throw new InputError('BMP bit masks are cut off');
        masks = [buf.readUInt32LE(54), buf.readUInt32LE(58), buf.readUInt32LE(62), n === 4 ? buf.readUInt32LE(66) : 0];
        paletteAt += 4 * n;
      }
    }
  } else {
    throw new InputError(`BMP header of ${dib} bytes is not one darkroom reads`);
  }
  if (compression === 4 || compression === 5) {
    throw new InputError(`BMP with embedded ${compression === 4 ? 'JPEG' : 'PNG'} data is not supported; convert it to TIFF or PNG`);
  }
  if (![0, 1, 2, 3, 6].includes(compression)) throw new InputError(`BMP compression ${compression} is not supported`);
  if (![1, 4, 8, 16, 24, 32].includes(bpp)) throw new InputError(`BMP with ${bpp} bits a pixel is not supported`);
  if ((compression === 1 && bpp !== 8) || (compression === 2 && bpp !== 4))
    throw new InputError('BMP RLE data does not match its bit depth');
  const height = Math.abs(rawHeight);
  if (width <= 0 || height <= 0) throw new InputError(`BMP size ${width}×${rawHeight} is not an image`);
  if (width * height > MAX_PIXELS) throw new InputError(`BMP of ${width}×${height} pixels is too large`);
  const palette: Array<[number, number, number]> = [];
  if (!whole) return { width, height, topDown: rawHeight < 0, bpp, compression, pixelOffset, masks, palette };
  if (bpp <= 8) {
    const count = colorsUsed > 0 && colorsUsed <= 1 << bpp ? colorsUsed : 1 << bpp;
    for (let i = 0; i < count; i++) {
      const at = paletteAt + i * paletteEntry;
      if (at + 3 > buf.length || at + 3 > pixelOffset) break;
      palette.push([buf[at + 2]!, buf[at + 1]!, buf[at]!]);
    }
    if (palette.length === 0) throw new InputError('BMP palette is missing');
  }
  if (pixelOffset >= buf.length) throw new InputError('BMP pixel data is missing');
  return { width, height, topDown: rawHeight < 0, bpp, compression, pixelOffset, masks, palette };
}

export function decodeBmp(buf: Buffer): DecodedBmp {
  const h = readHeader(buf);
  if (h.compression === 1 || h.compression === 2) return decodeRle(buf, h);
  const { width, height, bpp } = h;
  const stride = Math.floor((bpp * width + 31) / 32) * 4;
  if (h.pixelOffset + stride * (height - 1) + Math.ceil((bpp * width) / 8) > buf.length) {
    throw new InputError('BMP pixel data is cut off');
  }
  const rowAt = (y: number) => h.pixelOffset + (h.topDown ? y : height - 1 - y) * stride;

  if (bpp <= 8) {
    const out = Buffer.alloc(width * height * 3);
    const perByte = 8 / bpp;
    const mask = (1 << bpp) - 1;
    for (let y = 0; y < height; y++) {
      const row = rowAt(y);
      for (let x = 0; x < width; x++) {
        const byte = buf[row + Math.floor(x / perByte)]!;
        const shift = 8 - bpp * ((x % perByte) + 1);
        const c = h.palette[(byte >> shift) & mask] ?? h.palette[0]!;
        out.set(c, (y * width + x) * 3);
      }
    }
    return { width, height, channels: 3, data: out };
  }

  if (bpp === 24) {
    const out = Buffer.alloc(width * height * 3);
    for (let y = 0; y < height; y++) {
      const row = rowAt(y);
      for (let x = 0; x < width; x++) {
        const s = row + x * 3;
        const d = (y * width + x) * 3;
        out[d] = buf[s + 2]!;
        out[d + 1] = buf[s + 1]!;
        out[d + 2] = buf[s]!;
      }
    }
    return { width, height, channels: 3, data: out };
  }

  // 16 and 32 bits: bit masks, given or the defaults (5-5-5; 8-8-8 with an unused byte).
  const masks: [number, number, number, number] =
    h.masks ?? (bpp === 16 ? [0x7c00, 0x03e0, 0x001f, 0] : [0x00ff0000, 0x0000ff00, 0x000000ff, 0xff000000]);
  const read = bpp === 16 ? (at: number) => buf.readUInt16LE(at) : (at: number) => buf.readUInt32LE(at);
  const bytes = bpp / 8;
  const channel = masks.map(maskReader);
  // A plain 32-bit BMP's fourth byte is "unused": many writers leave it 0. Alpha counts only
  // when a mask says so, or when the byte is not 0 everywhere.
  let alpha = masks[3] !== 0;
  if (alpha && h.masks === null) {
    alpha = false;
    for (let y = 0; y < height && !alpha; y++) {
      const row = rowAt(y);
      for (let x = 0; x < width; x++) {
        if (channel[3]!(read(row + x * bytes)) !== 0) {
          alpha = true;
          break;
        }
      }
    }
  }
  const channels = alpha ? 4 : 3;
  const out = Buffer.alloc(width * height * channels);
  for (let y = 0; y < height; y++) {
    const row = rowAt(y);
    for (let x = 0; x < width; x++) {
      const v = read(row + x * bytes);
      const d = (y * width + x) * channels;
      out[d] = channel[0]!(v);
      out[d + 1] = channel[1]!(v);
      out[d + 2] = channel[2]!(v);
      if (alpha) out[d + 3] = channel[3]!(v);
    }
  }
  return { width, height, channels, data: out };
}

/** A function taking a pixel value to the 0–255 value of one mask's bits. */
function maskReader(mask: number): (v: number) => number {
  if (mask === 0) return () => 255;
  const m = mask >>> 0;
  let shift = 0;
  while (((m >>> shift) & 1) === 0) shift++;
  let bits = 0;
  while (((m >>> (shift + bits)) & 1) === 1 && shift + bits < 32) bits++;
  const max = 2 ** bits - 1;
  return (v) => Math.round(((((v >>> 0) & m) >>> shift) * 255) / max);
}

function decodeRle(buf: Buffer, h: Header): DecodedBmp {
  const { width, height } = h;
  const indices = new Uint8Array(width * height);
  let x = 0;
  let y = 0;
  let p = h.pixelOffset;
  const put = (i: number) => {
    if (x < width && y < height) indices[(h.topDown ? y : height - 1 - y) * width + x] = i;
    x++;
  };
  const four = h.compression === 2;
  for (;;) {
    if (p + 1 >= buf.length) break;
    const count = buf[p]!;
    const value = buf[p + 1]!;
    p += 2;
    if (count > 0) {
      for (let i = 0; i < count; i++) put(four ? (i % 2 === 0 ? value >> 4 : value & 15) : value);
      continue;
    }
    if (value === 0) {
      x = 0;
      y++;
    } else if (value === 1) {
      break;
    } else if (value === 2) {
      if (p + 1 >= buf.length) break;
      x += buf[p]!;
      y += buf[p + 1]!;
      p += 2;
    } else {
      const n = value;
      const byteLen = four ? Math.ceil(n / 2) : n;
      for (let i = 0; i < n; i++) {
        const b = buf[p + (four ? i >> 1 : i)] ?? 0;
        put(four ? (i % 2 === 0 ? b >> 4 : b & 15) : b);
      }
      p += byteLen + (byteLen % 2);
    }
    if (y >= height) break;
  }
  const out = Buffer.alloc(width * height * 3);
  for (let i = 0; i < indices.length; i++) out.set(h.palette[indices[i]!] ?? h.palette[0]!, i * 3);
  return { width, height, channels: 3, data: out };
}
