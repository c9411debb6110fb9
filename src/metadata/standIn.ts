import { randomBytes } from 'node:crypto';
import { open, type FileHandle } from 'node:fs/promises';
import { crc32 } from 'node:zlib';
import type { OutputKind } from './tags.js';

/**
 * An output of any size gets its metadata in time and memory that follow its metadata, not
 * its pixels. ExifTool rewrites a file by reading it through (a 1 GiB PNG took perl 2.7 GB
 * and minutes, since it checks each chunk's CRC as it copies it), so it is never handed the
 * service's bytes. It is handed a *stand-in*: the same file with every bulky chunk (the
 * image data, a large private chunk) replaced by a small placeholder chunk of the same type
 * that carries the chunk's first bytes and a token. Everything ExifTool reads or edits —
 * the JPEG segments before the scan, PNG's text, eXIf, iCCP and header chunks, WEBP's
 * VP8X, ICCP, EXIF and XMP chunks — is in the stand-in as it is in the file, so ExifTool
 * decides exactly what it would decide on the whole file: where new metadata goes, what it
 * moves, what it removes. Its rewrite of the stand-in is then the output's *layout*: its
 * bytes, with each placeholder replaced by the range of the service's file it stands for.
 * Every chunk the service sent that ExifTool does not edit is copied byte for byte, in its
 * place, so the output decodes to exactly the served pixels.
 *
 * JPEG: the segments before the first scan (SOS) are the stand-in; the scan and all after
 * it (the entropy-coded data, further scans, EOI, any trailer) are one range. A JPEG whose
 * MPF segment points into that range (its other pictures) is not spliced: the offsets would
 * move. PNG: the chunks; IDAT/fdAT and private chunks over 64 KiB are bulk. WEBP: the RIFF
 * chunks; VP8/VP8L/ALPH/ANMF and other chunks over 64 KiB are bulk, and the RIFF size is
 * set for the whole. A file whose structure cannot be walked, or whose metadata alone is
 * over STAND_IN_MAX, is not spliced (the caller falls back: metadata/writer.ts).
 */

/** A part of an output: bytes, or a range [start, end) of a file. */
export type LayoutPart = Buffer | { readonly file: string; readonly start: number; readonly end: number };
/** The output, part after part. */
export type Layout = readonly LayoutPart[];

export interface StandIn {
  /** The stand-in file's bytes, to write where ExifTool can read them (the output's own extension). */
  readonly bytes: Buffer;
  /** The output's layout from ExifTool's rewrite of the stand-in; throws NotSpliceable when a placeholder did not come back whole. */
  layoutOf(rewritten: Buffer): Layout;
}

/** Why a file is not spliced (metadata/writer.ts falls back). */
export class NotSpliceable extends Error {}

/** Chunks (PNG, WEBP) larger than this that ExifTool has no reason to read are bulk. */
const SMALL = 64 * 1024;
/** The stand-in is at most this: above it the metadata alone would cost ExifTool real memory. */
const STAND_IN_MAX = 32 * 1024 * 1024;
/** How much of a bulk chunk's data its placeholder keeps: enough for a VP8/VP8L frame header (the image's size). */
const PREFIX = 32;
/** Read the file in windows of this size: a walk over 8 KiB IDAT chunks reads 128 headers a window. */
const WINDOW = 1024 * 1024;

/** PNG chunks ExifTool reads or edits whatever their size: text, EXIF, the ICC profile, C2PA. */
const PNG_METADATA = new Set(['tEXt', 'zTXt', 'iTXt', 'eXIf', 'zxIf', 'iCCP', 'caBX']);
const PNG_IMAGE_DATA = new Set(['IDAT', 'fdAT', 'JDAT']);
const WEBP_METADATA = new Set(['VP8X', 'ICCP', 'EXIF', 'XMP ', 'ANIM']);
const WEBP_IMAGE_DATA = new Set(['VP8 ', 'VP8L', 'ALPH', 'ANMF']);
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** Random reads of a file, through one window. */
interface Source {
  readonly size: number;
  read(at: number, len: number): Promise<Buffer>;
}

async function fileSource(h: FileHandle): Promise<Source> {
  const size = (await h.stat()).size;
  let start = 0;
  let win = Buffer.alloc(0);
  return {
    size,
    async read(at, len) {
      if (at >= start && at + len <= start + win.length) return win.subarray(at - start, at - start + len);
      const n = Math.max(len, WINDOW);
      const buf = Buffer.allocUnsafe(Math.min(n, Math.max(0, size - at)));
      const { bytesRead } = await h.read(buf, 0, buf.length, at);
      start = at;
      win = buf.subarray(0, bytesRead);
      return win.subarray(0, Math.min(len, bytesRead));
    },
  };
}

/** One chunk or segment: where it is in the file, whether the stand-in keeps it, its type. */
interface Unit {
  readonly type: string;
  readonly start: number;
  readonly end: number;
  /** Where its data starts and how long it is (PNG, WEBP). */
  readonly data: number;
  readonly dataLen: number;
  readonly bulk: boolean;
}

interface Walk {
  readonly units: readonly Unit[];
  /** Bytes after the structure (after IEND, after the RIFF chunk, from the first SOS in a JPEG): copied as they are. */
  readonly tail: number;
}

/**
 * The stand-in of `file`, or why it cannot be spliced. Reads the file's structure (headers
 * and the chunks the stand-in keeps), never its image data.
 */
export async function standInOf(file: string, kind: OutputKind): Promise<StandIn | string> {
  const h = await open(file, 'r');
  try {
    const src = await fileSource(h);
    const walk = await walkOf(src, kind);
    if (typeof walk === 'string') return walk;
    return await build(src, file, kind, walk);
  } finally {
    await h.close();
  }
}

function walkOf(src: Source, kind: OutputKind): Promise<Walk | string> {
  return kind === 'png' ? walkPng(src) : kind === 'webp' ? walkWebp(src) : walkJpeg(src);
}

/** `headOnly`: stop at the first bulk chunk (its unit the last), its data not read: a body's head as it streams in. */
async function walkPng(src: Source, headOnly = false): Promise<Walk | string> {
  if (!(await src.read(0, 8)).equals(PNG_SIGNATURE)) return 'not a PNG';
  const units: Unit[] = [];
  for (let at = 8; ;) {
    const head = await src.read(at, 8);
    if (head.length < 8) return 'a PNG without its IEND chunk';
    const len = head.readUInt32BE(0);
    const type = head.toString('latin1', 4, 8);
    const end = at + 12 + len;
    const bulk = isBulkPngChunk(type, len);
    if (len > 0x7fffffff || (end > src.size && !(headOnly && bulk))) return `a PNG whose ${type} chunk runs past the end of the file`;
    units.push({ type, start: at, end, data: at + 8, dataLen: len, bulk });
    if (headOnly && bulk) return { units, tail: at };
    at = end;
    if (type === 'IEND') return { units, tail: at };
  }
}

/** Whether a PNG chunk is bulk: image data, or a large chunk ExifTool has no reason to read. */
export function isBulkPngChunk(type: string, len: number): boolean {
  return PNG_IMAGE_DATA.has(type) || (len > SMALL && !PNG_METADATA.has(type));
}

async function walkWebp(src: Source): Promise<Walk | string> {
  const head = await src.read(0, 12);
  if (head.length < 12 || head.toString('latin1', 0, 4) !== 'RIFF' || head.toString('latin1', 8, 12) !== 'WEBP') return 'not a WEBP';
  const riffEnd = 8 + head.readUInt32LE(4);
  if (riffEnd > src.size) return 'a WEBP whose RIFF size runs past the end of the file';
  const units: Unit[] = [];
  for (let at = 12; at < riffEnd;) {
    const h = await src.read(at, 8);
    if (h.length < 8) return 'a WEBP chunk cut short';
    const type = h.toString('latin1', 0, 4);
    const len = h.readUInt32LE(4);
    const end = at + 8 + len + (len & 1);
    if (end > riffEnd) return `a WEBP whose ${type.trim()} chunk runs past the RIFF size`;
    const bulk = WEBP_IMAGE_DATA.has(type) || (len > SMALL && !WEBP_METADATA.has(type));
    units.push({ type, start: at, end, data: at + 8, dataLen: len, bulk });
    at = end;
  }
  return { units, tail: riffEnd };
}

/** Markers that stand alone (no length): RSTn, TEM; SOI and EOI before a scan are not a JPEG's head. */
async function walkJpeg(src: Source): Promise<Walk | string> {
  const soi = await src.read(0, 2);
  if (soi.length < 2 || soi[0] !== 0xff || soi[1] !== 0xd8) return 'not a JPEG';
  const units: Unit[] = [{ type: 'SOI', start: 0, end: 2, data: 2, dataLen: 0, bulk: false }];
  for (let at = 2; ;) {
    const h = await src.read(at, 4);
    if (h.length < 2 || h[0] !== 0xff) return 'a JPEG whose segments cannot be followed';
    const marker = h[1]!;
    if (marker === 0xff) {
      // A fill byte: kept as it is, in its place.
      units.push({ type: 'fill', start: at, end: at + 1, data: at + 1, dataLen: 0, bulk: false });
      at++;
      continue;
    }
    if (marker === 0xd8 || marker === 0xd9 || marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
      return 'a JPEG with a stand-alone marker before its first scan';
    }
    if (h.length < 4) return 'a JPEG cut short before its first scan';
    const len = h.readUInt16BE(2);
    const end = at + 2 + len;
    if (len < 2 || end > src.size) return 'a JPEG whose segments run past the end of the file';
    if (marker === 0xda) {
      // The scan's own header is kept (ExifTool copies it); its data and the rest are the tail.
      units.push({ type: 'SOS', start: at, end, data: at + 4, dataLen: len - 2, bulk: false });
      return { units, tail: end };
    }
    if (marker === 0xe2 && len >= 6 && (await src.read(at + 4, 4)).toString('latin1') === 'MPF\0') {
      return "a JPEG with an MPF segment (its other pictures' offsets would move)";
    }
    units.push({ type: `APP${marker.toString(16)}`, start: at, end, data: at + 4, dataLen: len - 2, bulk: false });
    at = end;
  }
}

/** A token no file of the service's holds by chance: `darkroom-stand-in-<random>-<n>`, ASCII (no 0xFF, so a JPEG scan stays one). */
function tokenFor(nonce: string, n: number): Buffer {
  return Buffer.from(`darkroom-stand-in-${nonce}-${n}.`, 'latin1');
}

async function build(src: Source, file: string, kind: OutputKind, walk: Walk): Promise<StandIn | string> {
  const nonce = randomBytes(8).toString('hex');
  const parts: Buffer[] = [];
  let size = 0;
  const push = (b: Buffer) => {
    parts.push(b);
    size += b.length;
  };
  /** Each placeholder: the bytes it carries, and the range of the file it stands for. */
  const placeholders: { type: string; data: Buffer; start: number; end: number }[] = [];
  if (kind === 'png') push(PNG_SIGNATURE);
  if (kind === 'webp') push(Buffer.alloc(12));
  const units = walk.units;
  for (let i = 0; i < units.length;) {
    const u = units[i]!;
    if (!u.bulk) {
      push(await src.read(u.start, u.end - u.start));
      if (size > STAND_IN_MAX) return `its metadata alone is over ${STAND_IN_MAX / 1024 / 1024} MiB`;
      i++;
      continue;
    }
    // A run of bulk chunks of one type becomes one placeholder of that type.
    let j = i;
    while (j + 1 < units.length && units[j + 1]!.bulk && units[j + 1]!.type === u.type && units[j + 1]!.start === units[j]!.end) j++;
    const prefix = Buffer.from(await src.read(u.data, Math.min(PREFIX, u.dataLen)));
    const data = Buffer.concat([prefix, tokenFor(nonce, placeholders.length)]);
    placeholders.push({ type: u.type, data, start: u.start, end: units[j]!.end });
    push(kind === 'png' ? pngChunk(u.type, data) : riffChunk(u.type, data));
    i = j + 1;
  }
  let tailStandIn: Buffer | null = null;
  if (kind === 'jpeg') {
    // The scan's data: a token, then EOI, where ExifTool expects the image to end.
    tailStandIn = Buffer.concat([tokenFor(nonce, 0xffff), Buffer.from([0xff, 0xd9])]);
    push(tailStandIn);
  }
  const bytes = Buffer.concat(parts, size);
  if (kind === 'webp') {
    bytes.write('RIFF', 0, 'latin1');
    bytes.writeUInt32LE(bytes.length - 8, 4);
    bytes.write('WEBP', 8, 'latin1');
  }
  const head = kind === 'jpeg' ? units.at(-1)! : null;
  return {
    bytes,
    layoutOf: (rewritten) =>
      kind === 'jpeg'
        ? jpegLayout(rewritten, tailStandIn!, head!, file, src.size)
        : chunkLayout(rewritten, kind, placeholders, file, walk.tail, src.size),
  };
}

/** A PNG chunk: length, type, data, CRC. */
export function pngChunk(type: string, data: Buffer): Buffer {
  const b = Buffer.alloc(12 + data.length);
  b.writeUInt32BE(data.length, 0);
  b.write(type, 4, 'latin1');
  data.copy(b, 8);
  b.writeUInt32BE(crc32(b.subarray(4, 8 + data.length)), 8 + data.length);
  return b;
}

function riffChunk(type: string, data: Buffer): Buffer {
  const b = Buffer.alloc(8 + data.length + (data.length & 1));
  b.write(type, 0, 'latin1');
  b.writeUInt32LE(data.length, 4);
  data.copy(b, 8);
  return b;
}

/** ExifTool's head of the stand-in, then the file from its first scan on: the tail ExifTool got must have come back as it was. */
function jpegLayout(rewritten: Buffer, tail: Buffer, sos: Unit, file: string, size: number): Layout {
  const sosLen = sos.end - sos.start;
  const at = rewritten.length - tail.length - sosLen;
  if (at < 2 || rewritten[at] !== 0xff || rewritten[at + 1] !== 0xda || !rewritten.subarray(at + sosLen).equals(tail)) {
    throw new NotSpliceable("ExifTool's rewrite does not end with the stand-in's scan");
  }
  return [rewritten.subarray(0, at), { file, start: sos.start, end: size }];
}

/** ExifTool's rewrite with each placeholder chunk replaced by the file's range it stands for, each found once. */
function chunkLayout(
  rewritten: Buffer,
  kind: 'png' | 'webp',
  placeholders: readonly { type: string; data: Buffer; start: number; end: number }[],
  file: string,
  tail: number,
  size: number,
): Layout {
  const parts: LayoutPart[] = [];
  const found = new Set<number>();
  let from = 0;
  let at = kind === 'png' ? 8 : 12;
  while (at < rewritten.length) {
    if (at + 8 > rewritten.length) throw new NotSpliceable("ExifTool's rewrite is cut short");
    const len = kind === 'png' ? rewritten.readUInt32BE(at) : rewritten.readUInt32LE(at + 4);
    const type = rewritten.toString('latin1', kind === 'png' ? at + 4 : at, kind === 'png' ? at + 8 : at + 4);
    const end = kind === 'png' ? at + 12 + len : at + 8 + len + (len & 1);
    const data = rewritten.subarray(at + 8, at + 8 + len);
    const p = placeholders.findIndex((x, i) => !found.has(i) && x.type === type && x.data.length === len && x.data.equals(data));
    if (p >= 0) {
      found.add(p);
      if (at > from) parts.push(rewritten.subarray(from, at));
      parts.push({ file, start: placeholders[p]!.start, end: placeholders[p]!.end });
      from = end;
    }
    at = end;
    if (kind === 'png' && type === 'IEND') break;
  }
  if (found.size !== placeholders.length) throw new NotSpliceable('a placeholder did not come back from ExifTool');
  if (from < rewritten.length) parts.push(rewritten.subarray(from));
  if (kind === 'webp') {
    // The RIFF size of the whole, less the bytes after the RIFF chunk.
    const total = parts.reduce((n, p) => n + (Buffer.isBuffer(p) ? p.length : p.end - p.start), 0);
    const first = Buffer.from(parts[0] as Buffer);
    first.writeUInt32LE(total - 8, 4);
    parts[0] = first;
  }
  if (tail < size) parts.push({ file, start: tail, end: size });
  return parts;
}

/**
 * A stand-in made from a body's first bytes alone, as they stream in (outputs/splice.ts):
 * the output is ExifTool's head (`headOf` its rewrite), then the service's body from `from`
 * on, written as it arrives: one write of the image data, none read back.
 */
export interface HeadStandIn {
  readonly kind: 'jpeg' | 'png';
  /** The stand-in file's bytes. */
  readonly bytes: Buffer;
  /** Where in the service's body the part after the head starts (a JPEG's first SOS, a PNG's first IDAT). */
  readonly from: number;
  /** ExifTool's head from its rewrite of `bytes`; throws NotSpliceable when the rewrite does not end as the stand-in did. */
  headOf(rewritten: Buffer): Buffer;
}

/** A PNG's IEND chunk (its CRC is that of the type alone). */
const PNG_IEND = pngChunk('IEND', Buffer.alloc(0));

/** Thrown by a head's Source when the bytes asked for have not arrived yet. */
class NeedMore extends Error {}

/**
 * The head stand-in of a body whose first bytes are `buf` (`ended`: all of it): null when
 * more bytes are needed, or why the head alone will not do (then the whole file is
 * spliced, after it is written: standInOf). A JPEG's head is its segments up to its first
 * scan, as standInOf makes it; a PNG's is its chunks up to its first image data chunk,
 * which with all after it is the part ExifTool never sees. Whether nothing after the head
 * is a chunk ExifTool would read (a PNG's text after its image data) can only be told once
 * the body is in: the writer checks it as the bytes go by (HeadCheck).
 */
export async function headStandInOf(buf: Buffer, kind: 'jpeg' | 'png', ended: boolean): Promise<HeadStandIn | null | string> {
  const src: Source = {
    size: ended ? buf.length : Number.MAX_SAFE_INTEGER,
    read: (at, len) => {
      if (at + len > buf.length && !ended) throw new NeedMore();
      return Promise.resolve(buf.subarray(Math.min(at, buf.length), Math.min(at + len, buf.length)));
    },
  };
  try {
    const walk = kind === 'png' ? await walkPng(src, true) : await walkJpeg(src);
    if (typeof walk === 'string') return walk;
    const nonce = randomBytes(8).toString('hex');
    const last = walk.units.at(-1)!;
    if (last.start > STAND_IN_MAX) return `its metadata alone is over ${STAND_IN_MAX / 1024 / 1024} MiB`;
    if (kind === 'jpeg') {
      // The scan's own header whole (the walk read its first bytes only).
      if ((await src.read(last.start, last.end - last.start)).length < last.end - last.start) return 'a JPEG cut short in its scan header';
      const tail = Buffer.concat([tokenFor(nonce, 0xffff), Buffer.from([0xff, 0xd9])]);
      return {
        kind,
        bytes: Buffer.concat([buf.subarray(0, last.end), tail]),
        from: last.start,
        headOf: (rewritten) => jpegLayout(rewritten, tail, last, '', last.end)[0] as Buffer,
      };
    }
    if (!PNG_IMAGE_DATA.has(last.type)) return `a PNG with a large ${last.type} chunk before its image data`;
    const data = Buffer.concat([Buffer.from(await src.read(last.data, Math.min(PREFIX, last.dataLen))), tokenFor(nonce, 0)]);
    const placeholder = pngChunk(last.type, data);
    return {
      kind,
      bytes: Buffer.concat([buf.subarray(0, last.start), placeholder, PNG_IEND]),
      from: last.start,
      headOf: (rewritten) => {
        // ExifTool writes what it adds before the first image data chunk: its rewrite ends with the placeholder and IEND as given.
        const at = rewritten.length - PNG_IEND.length - placeholder.length;
        if (at < 8 || !rewritten.subarray(at).equals(Buffer.concat([placeholder, PNG_IEND]))) {
          throw new NotSpliceable("ExifTool's rewrite does not end with the stand-in's image data and IEND");
        }
        return rewritten.subarray(0, at);
      },
    };
  } catch (err) {
    if (err instanceof NeedMore) return null;
    throw err;
  }
}
