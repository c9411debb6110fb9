import { crc32, inflateSync } from 'node:zlib';
import { exifColour, notSrgb } from './colour.js';

/**
 * What discovery needs to know of a plain PNG or JPEG (its size in pixels, EXIF
 * orientation, bit depth), read from its first bytes without sharp.
 *
 * Discovery looks at every file of an archive. sharp's metadata() took 1.4–1.6 s for
 * 10,000 small PNGs here (4 in flight, 2 cores), so ~15 s of a 100,000-file discovery;
 * reading these few dozen bytes takes microseconds a file. So the
 * common cases are read here, and anything unusual — a header that runs past the bytes at
 * hand, an eXIf chunk, 12-bit or CMYK JPEG, EXIF stored in an unexpected way, WEBP —
 * returns null, and the caller asks sharp, as before; so does a colour profile other than
 * sRGB's, whose photo is converted (colour.ts). Only what sharp would report
 * identically is answered here (test/inputs/headers.test.ts compares the two).
 */
export interface HeaderFacts {
  readonly width: number;
  readonly height: number;
  readonly orientation: number;
  readonly sixteenBit: boolean;
}

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
/** Valid bit depths per PNG colour type (PNG spec, table 11.1). */
const PNG_DEPTHS: Record<number, readonly number[]> = { 0: [1, 2, 4, 8, 16], 2: [8, 16], 3: [1, 2, 4, 8], 4: [8, 16], 6: [8, 16] };
const MAX_DIMENSION = 0x7fffffff;

/** Facts from the first bytes of a file (or all of it), or null when sharp must be asked. */
export function headerFacts(bytes: Buffer): HeaderFacts | null {
  if (bytes.length >= 8 && PNG_SIGNATURE.every((b, i) => bytes[i] === b)) return pngFacts(bytes);
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return jpegFacts(bytes);
  return null;
}

function pngFacts(b: Buffer): HeaderFacts | null {
  // IHDR first, 13 bytes, its CRC right.
  if (b.length < 33 || b.readUInt32BE(8) !== 13 || b.toString('latin1', 12, 16) !== 'IHDR') return null;
  if (crc32(b.subarray(12, 29)) !== b.readUInt32BE(29)) return null;
  const width = b.readUInt32BE(16);
  const height = b.readUInt32BE(20);
  const depth = b[24]!;
  const colour = b[25]!;
  if (width === 0 || height === 0 || width > MAX_DIMENSION || height > MAX_DIMENSION) return null;
  if (!PNG_DEPTHS[colour]?.includes(depth) || b[26] !== 0 || b[27] !== 0 || b[28]! > 1) return null;
  // The chunks before the pixels: an eXIf chunk may carry an orientation, which sharp reads.
  for (let at = 33; ;) {
    if (at + 8 > b.length) return null;
    const len = b.readUInt32BE(at);
    const type = b.toString('latin1', at + 4, at + 8);
    if (type === 'IDAT') break;
    if (type === 'eXIf' || type === 'IEND' || len > MAX_DIMENSION) return null;
    // A colour profile other than sRGB's: sharp reads the photo, which is converted (colour.ts).
    if (type === 'iCCP' && !srgbPngProfile(b, at + 8, len)) return null;
    at += 12 + len;
  }
  return { width, height, orientation: 1, sixteenBit: depth > 8 };
}

/** Start-of-frame markers: C0–CF but DHT (C4), JPG (C8) and DAC (CC). */
function isSof(m: number): boolean {
  return m >= 0xc0 && m <= 0xcf && m !== 0xc4 && m !== 0xc8 && m !== 0xcc;
}

function jpegFacts(b: Buffer): HeaderFacts | null {
  let frame: { width: number; height: number } | null = null;
  let orientation: number | null = null;
  // Every segment up to the scan: libjpeg hands libvips all the APPn markers before SOS.
  for (let at = 2; ;) {
    if (at + 4 > b.length || b[at] !== 0xff) return null;
    const marker = b[at + 1]!;
    if (marker === 0xff) {
      at++; // fill byte
      continue;
    }
    if (marker === 0xda) break; // start of scan
    if (marker === 0xd9 || marker === 0xd8 || (marker >= 0xd0 && marker <= 0xd7) || marker === 0x01) return null;
    const len = b.readUInt16BE(at + 2);
    const data = at + 4;
    const end = at + 2 + len;
    if (len < 2 || end > b.length) return null;
    if (isSof(marker)) {
      if (frame !== null || len < 8) return null;
      const precision = b[data]!;
      const height = b.readUInt16BE(data + 1);
      const width = b.readUInt16BE(data + 3);
      const components = b[data + 5]!;
      // 12-bit, CMYK/YCCK (4 components) and a height given later (DNL): sharp's to judge.
      if (precision !== 8 || width === 0 || height === 0 || (components !== 1 && components !== 3)) return null;
      frame = { width, height };
    } else if (marker === 0xe2 && len >= 14 && b.toString('latin1', data, data + 12) === 'ICC_PROFILE\0') {
      // A colour profile other than sRGB's, or one in several pieces: sharp reads the photo (colour.ts).
      if (b[data + 12] !== 1 || b[data + 13] !== 1 || notSrgb(b.subarray(data + 14, end), undefined) !== null) return null;
    } else if (marker === 0xe1 && len >= 8 && b.toString('latin1', data, data + 6) === 'Exif\0\0') {
      if (orientation !== null) return null;
      orientation = exifOrientation(b.subarray(data + 6, end));
      if (orientation === null) return null;
      // Adobe RGB said by EXIF alone: sharp reads the photo, which is converted (colour.ts).
      if (exifColour(b.subarray(data, end)) !== null) return null;
    }
    at = end;
  }
  if (frame === null) return null;
  return { ...frame, orientation: orientation ?? 1, sixteenBit: false };
}

/** An iCCP chunk (name, NUL, method 0, zlib data) holding an sRGB profile. */
function srgbPngProfile(b: Buffer, data: number, len: number): boolean {
  if (data + len > b.length) return false;
  const nul = b.indexOf(0, data);
  if (nul < 0 || nul + 2 > data + len || b[nul + 1] !== 0) return false;
  try {
    return notSrgb(inflateSync(b.subarray(nul + 2, data + len), { maxOutputLength: 1 << 20 }), undefined) === null;
  } catch {
    return false;
  }
}

/** The Orientation tag (0x0112) of IFD0 in a TIFF-structured EXIF block: 1 when absent, null when in doubt. */
function exifOrientation(t: Buffer): number | null {
  if (t.length < 8) return null;
  const order = t.toString('latin1', 0, 2);
  if (order !== 'II' && order !== 'MM') return null;
  const le = order === 'II';
  const u16 = (o: number) => (le ? t.readUInt16LE(o) : t.readUInt16BE(o));
  const u32 = (o: number) => (le ? t.readUInt32LE(o) : t.readUInt32BE(o));
  if (u16(2) !== 42) return null;
  const ifd = u32(4);
  if (ifd < 8 || ifd + 2 > t.length) return null;
  const n = u16(ifd);
  if (ifd + 2 + n * 12 > t.length) return null;
  for (let i = 0; i < n; i++) {
    const e = ifd + 2 + i * 12;
    if (u16(e) !== 0x0112) continue;
    // SHORT, one value, 1–8: anything else is left to sharp (libexif).
    if (u16(e + 2) !== 3 || u32(e + 4) !== 1) return null;
    const v = u16(e + 8);
    return v >= 1 && v <= 8 ? v : null;
  }
  return 1;
}
