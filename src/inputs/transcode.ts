import path from 'node:path';
import sharp from 'sharp';
import { clock } from '../clock.js';
import { DEFAULT_MAX_INPUT_PIXELS } from '../config/index.js';
import { bmpSize, decodeBmp, isBmp } from './bmp.js';
import { exifColour, notSrgb, withIccProfile } from './colour.js';
import { ADOBE_RGB, rgbProfile } from './icc.js';
import { headerFacts } from './headers.js';
import { readHead, readWhole, sha256 } from './read.js';
import { CONTENT_TYPES, EXTENSIONS, sniffImage, type ImageType } from '../spec/images.js';
import { InputError } from '../errors.js';

/**
 * Archive formats, converted locally before upload (input.transcode: auto). The service
 * takes JPG, PNG and WEBP; archives hold TIFF scans, BMP and 16-bit PNG, photos whose EXIF
 * says "rotate me", and scans far larger than any result needs. The source file is only
 * ever read: the converted bytes go straight to the upload.
 *
 * What is converted, and to what:
 * - TIFF, BMP, 16-bit PNG: always (auto), to JPEG (quality 95, no chroma subsampling), or
 *   to PNG when the image has alpha or was a PNG (lossless stays lossless);
 * - an EXIF orientation other than 1: the pixels are turned, so every step sees the photo
 *   upright whatever the service does with EXIF;
 * - a colour profile other than sRGB (wide gamut, grey, CMYK; colour.ts): the numbers are
 *   converted to sRGB, which the service assumes (sharp converts through the embedded profile);
 * - more pixels than input.maxPixels: scaled down to fit, aspect kept.
 * With transcode: off, TIFF and BMP are skipped, images over maxPixels are skipped, and
 * everything else goes as it is.
 */

export type SourceType = ImageType | 'tiff' | 'bmp';

export interface TranscodeOptions {
  readonly transcode: 'auto' | 'off';
  readonly maxPixels: number | null;
  readonly maxUploadBytes: number;
  /** limits.maxInputPixels: above it an image is refused from its header, never decoded. Default 100 Mpx. */
  readonly maxInputPixels?: number;
}

export interface Inspection {
  readonly type: SourceType | null;
  /** Why the file is refused before any call is spent, or null. */
  readonly skipReason: string | null;
  /** Why it is converted before upload ("TIFF", "EXIF orientation 6", …), or null when it goes as it is. */
  readonly transcode: string | null;
}

const HEAD_BYTES = 256;

export function sniffSource(head: Uint8Array): SourceType | null {
  const t = sniffImage(head);
  if (t !== null) return t;
  if (
    head.length >= 4 &&
    ((head[0] === 0x49 && head[1] === 0x49 && head[2] === 0x2a && head[3] === 0x00) ||
      (head[0] === 0x4d && head[1] === 0x4d && head[2] === 0x00 && head[3] === 0x2a))
  ) {
    return 'tiff';
  }
  if (
    head.length >= 4 &&
    ((head[0] === 0x49 && head[1] === 0x49 && head[2] === 0x2b && head[3] === 0x00) ||
      (head[0] === 0x4d && head[1] === 0x4d && head[2] === 0x00 && head[3] === 0x2b))
  ) {
    return 'tiff'; // BigTIFF
  }
  if (isBmp(head) && head.length >= 18) {
    const dib = Buffer.from(head.buffer, head.byteOffset, head.length).readUInt32LE(14);
    if ([12, 40, 52, 56, 64, 108, 124].includes(dib)) return 'bmp';
  }
  return null;
}

interface Facts {
  readonly width: number;
  readonly height: number;
  readonly orientation: number;
  readonly sixteenBit: boolean;
  readonly hasAlpha: boolean;
  /** Why its numbers are not sRGB (a wide-gamut, grey or CMYK profile, colour.ts), or null. */
  readonly colour: string | null;
  /** A JPEG that says Adobe RGB in its EXIF alone: converted through an Adobe RGB profile. */
  readonly adobeByExif?: boolean;
}

/** How the operator knows each type, in messages. */
export const SOURCE_NAMES: Record<SourceType, string> = { jpeg: 'JPG', png: 'PNG', webp: 'WEBP', tiff: 'TIFF', bmp: 'BMP' };
const NAMES = SOURCE_NAMES;

/** The hard ceiling (limits.maxInputPixels), from the header alone: a bomb is never decoded. */
function overPixelCeiling(width: number, height: number, maxInputPixels: number): string | null {
  if (width * height <= maxInputPixels) return null;
  const mpx = Math.round((width * height) / 1e6);
  return `${width}×${height} (${mpx} Mpx) is over limits.maxInputPixels (${maxInputPixels}): refused from its header, not decoded; scale it down, or raise limits.maxInputPixels`;
}

function maxInputPixelsOf(opts: Pick<TranscodeOptions, 'maxInputPixels'>): number {
  return opts.maxInputPixels ?? DEFAULT_MAX_INPUT_PIXELS;
}

/** The decision, from what the headers say. */
function decide(type: SourceType, f: Facts, opts: TranscodeOptions): { skipReason: string | null; transcode: string | null } {
  const ceiling = overPixelCeiling(f.width, f.height, maxInputPixelsOf(opts));
  if (ceiling !== null) return { skipReason: ceiling, transcode: null };
  const over = opts.maxPixels !== null && f.width * f.height > opts.maxPixels;
  const overText = `${f.width}×${f.height} is over input.maxPixels (${opts.maxPixels})`;
  if (opts.transcode === 'off') {
    if (type === 'tiff' || type === 'bmp') {
      return { skipReason: `${NAMES[type]} is not accepted by the service; set input.transcode: auto to convert it`, transcode: null };
    }
    if (over) return { skipReason: `${overText}; set input.transcode: auto to scale it down`, transcode: null };
    return { skipReason: null, transcode: null };
  }
  const why: string[] = [];
  if (type === 'tiff' || type === 'bmp') why.push(NAMES[type]);
  else if (f.sixteenBit) why.push(`16-bit ${NAMES[type]}`);
  if (f.orientation > 1) why.push(`EXIF orientation ${f.orientation}`);
  if (f.colour !== null) why.push(`${f.colour} converted to sRGB`);
  if (over) why.push(`${f.width}×${f.height} over input.maxPixels`);
  return { skipReason: null, transcode: why.length > 0 ? why.join(', ') : null };
}

async function factsOf(type: SourceType, input: string | Buffer): Promise<Facts> {
  if (type === 'bmp') {
    const head = typeof input === 'string' ? await readHead(input, HEAD_BYTES) : input.subarray(0, HEAD_BYTES);
    const { width, height } = bmpSize(head);
    return { width, height, orientation: 1, sixteenBit: false, hasAlpha: false, colour: null };
  }
  // Headers only: no pixel limit here, so an image over it is refused by decide() with its size.
  const m = await sharp(input, { limitInputPixels: false }).metadata();
  const sixteenBit = m.depth === 'ushort' || m.depth === 'short' || (m.bitsPerSample ?? 8) > 8;
  const byExif = type === 'jpeg' && !m.icc ? exifColour(m.exif) : null;
  return {
    width: m.width ?? 0,
    height: m.height ?? 0,
    orientation: m.orientation ?? 1,
    sixteenBit,
    hasAlpha: m.hasAlpha ?? false,
    colour: notSrgb(m.icc, m.space) ?? byExif,
    ...(byExif !== null ? { adobeByExif: true } : {}),
  };
}

/**
 * Discovery's look at one file: its type by content, whether it will be converted, and
 * whether it is refused before any call. Reads the headers only: `start`, the file's first
 * bytes (or all of them) when the caller has read them already, or its first 256 bytes.
 * Plain PNG and JPEG headers are read here (headers.ts); other files are sharp's to read.
 */
export async function inspectSource(file: string, sizeBytes: number, opts: TranscodeOptions, start?: Buffer): Promise<Inspection> {
  if (sizeBytes === 0) return { type: null, skipReason: 'empty file', transcode: null };
  let head: Buffer;
  try {
    head = start ?? (await clock.io(readHead(file, HEAD_BYTES)));
  } catch (err) {
    return { type: null, skipReason: `cannot read (${(err as NodeJS.ErrnoException).code ?? String(err)})`, transcode: null };
  }
  const type = sniffSource(head);
  if (type === null) {
    const what = opts.transcode === 'auto' ? 'a JPG, PNG, WEBP, TIFF or BMP image' : 'a JPG, PNG or WEBP image';
    return { type: null, skipReason: `not ${what} by its content`, transcode: null };
  }
  const tooBig = `file is ${sizeBytes} bytes, over limits.maxUploadBytes (${opts.maxUploadBytes})`;
  // Always the headers, transcoding or not: limits.maxInputPixels applies to every input.
  let facts: Facts;
  try {
    const known = type === 'png' || type === 'jpeg' ? headerFacts(head) : null;
    // hasAlpha does not enter the decision; a conversion reads the facts again, with sharp.
    facts = known ? { ...known, hasAlpha: false, colour: null } : await clock.io(factsOf(type, file));
  } catch (err) {
    return { type, skipReason: `cannot read the ${NAMES[type]} image: ${firstLine(err)}`, transcode: null };
  }
  const d = decide(type, facts, opts);
  if (d.skipReason) return { type, ...d };
  // A file to be converted is measured after conversion (at upload); one sent as it is, now.
  if (d.transcode === null && sizeBytes > opts.maxUploadBytes) return { type, skipReason: tooBig, transcode: null };
  return { type, ...d };
}

export type Prepared =
  | {
      readonly kind: 'bytes';
      readonly bytes: Buffer;
      readonly type: ImageType;
      readonly contentType: string;
      readonly filename: string;
      /** Why it was converted, or null when these are the file's own bytes. */
      readonly transcoded: string | null;
    }
  | { readonly kind: 'url'; readonly url: string }
  | { readonly kind: 'skip'; readonly reason: string };

export interface PrepareItem {
  readonly rel_path: string;
  readonly src_path: string;
  readonly content_hash: string | null;
  /** The size discovery recorded: small files are read directly (read.ts, SMALL_FILE_BYTES). */
  readonly size_bytes?: number | null;
}

/**
 * The bytes to upload for an item: the file as it is, or converted (see the file comment).
 * Checks the file is still the content discovery found: if it changed, the item is skipped
 * and the next run picks the new version up as a changed file.
 */
export async function prepareUpload(item: PrepareItem, opts: TranscodeOptions): Promise<Prepared> {
  if (item.content_hash?.startsWith('url:')) return { kind: 'url', url: item.src_path };
  let bytes: Buffer;
  try {
    bytes = await readWhole(item.src_path, item.size_bytes);
  } catch (err) {
    return { kind: 'skip', reason: `cannot read ${item.rel_path} (${(err as NodeJS.ErrnoException).code ?? String(err)})` };
  }
  if (bytes.length === 0) return { kind: 'skip', reason: 'empty file' };
  const hashed = item.content_hash !== null && /^[0-9a-f]{64}$/.test(item.content_hash);
  if (hashed && sha256(bytes) !== item.content_hash) {
    return { kind: 'skip', reason: 'the file changed after it was found; run again to process the new version' };
  }
  const type = sniffSource(bytes.subarray(0, HEAD_BYTES));
  if (type === null) {
    return {
      kind: 'skip',
      reason: `not ${opts.transcode === 'auto' ? 'a JPG, PNG, WEBP, TIFF or BMP' : 'a JPG, PNG or WEBP'} image by its content`,
    };
  }
  const asIs = (t: ImageType): Prepared => ({
    kind: 'bytes',
    bytes,
    type: t,
    contentType: CONTENT_TYPES[t],
    filename: path.posix.basename(item.rel_path),
    transcoded: null,
  });
  try {
    // Plain PNG and JPEG headers say all the decision needs (sharp's metadata() is ~0.2 ms
    // of CPU even for a tiny image); the conversion itself wants sharp's full facts.
    const known = type === 'png' || type === 'jpeg' ? headerFacts(bytes) : null;
    let facts = known ? { ...known, hasAlpha: false, colour: null } : await clock.io(factsOf(type, bytes));
    const d = decide(type, facts, opts);
    if (d.skipReason) return { kind: 'skip', reason: d.skipReason };
    if (d.transcode === null) {
      return bytes.length > opts.maxUploadBytes ? { kind: 'skip', reason: tooBigText(bytes.length, opts) } : asIs(type as ImageType);
    }
    if (known) facts = await clock.io(factsOf(type, bytes));
    const out = await clock.io(convert(bytes, type, facts, opts.maxPixels, maxInputPixelsOf(opts)));
    if (out.bytes.length > opts.maxUploadBytes) {
      return {
        kind: 'skip',
        reason: `still ${out.bytes.length} bytes after converting (${d.transcode}), over limits.maxUploadBytes (${opts.maxUploadBytes}); set input.maxPixels`,
      };
    }
    const base = path.posix.basename(item.rel_path).replace(/\.[^.]*$/, '');
    return {
      kind: 'bytes',
      bytes: out.bytes,
      type: out.type,
      contentType: CONTENT_TYPES[out.type],
      filename: `${base}.${EXTENSIONS[out.type]}`,
      transcoded: d.transcode,
    };
  } catch (err) {
    return { kind: 'skip', reason: `cannot convert the ${NAMES[type]} image: ${firstLine(err)}` };
  }
}

/** Decode, turn upright, scale down to maxPixels, and encode as JPEG (or PNG for alpha or PNG sources). */
async function convert(
  bytes: Buffer,
  type: SourceType,
  facts: Facts,
  maxPixels: number | null,
  maxInputPixels = DEFAULT_MAX_INPUT_PIXELS,
): Promise<{ bytes: Buffer; type: 'jpeg' | 'png'; width: number; height: number }> {
  let img: sharp.Sharp;
  let hasAlpha = facts.hasAlpha;
  if (type === 'bmp') {
    const d = decodeBmp(bytes);
    hasAlpha = d.channels === 4;
    img = sharp(d.data, { raw: { width: d.width, height: d.height, channels: d.channels } });
  } else {
    // Adobe RGB said by EXIF alone: the numbers are read through an Adobe RGB profile, as an embedded one would have them.
    const input = facts.adobeByExif ? withIccProfile(bytes, rgbProfile(ADOBE_RGB)) : bytes;
    img = sharp(input, { failOn: 'error', limitInputPixels: maxInputPixels });
  }
  img = img.rotate(); // EXIF orientation; a no-op without one
  const turned = facts.orientation >= 5;
  const w = turned ? facts.height : facts.width;
  const h = turned ? facts.width : facts.height;
  let width = w;
  let height = h;
  if (maxPixels !== null && w * h > maxPixels) {
    const s = Math.sqrt(maxPixels / (w * h));
    width = Math.max(1, Math.floor(w * s));
    height = Math.max(1, Math.floor(h * s));
    img = img.resize(width, height, { fit: 'fill', kernel: 'lanczos3' });
  }
  const png = hasAlpha || type === 'png';
  const out = png
    ? await img.png({ compressionLevel: 6 }).toBuffer()
    : await img.jpeg({ quality: 95, chromaSubsampling: '4:4:4' }).toBuffer();
  return { bytes: out, type: png ? 'png' : 'jpeg', width, height };
}

function tooBigText(n: number, opts: TranscodeOptions): string {
  return `file is ${n} bytes, over limits.maxUploadBytes (${opts.maxUploadBytes})`;
}

function firstLine(err: unknown): string {
  const e = err instanceof InputError ? err.message : ((err as Error)?.message ?? String(err));
  return e.split('\n')[0]!;
}
