import { crc32, deflateSync } from 'node:zlib';
import sharp from 'sharp';

/**
 * Damaged and hostile inputs, made on the fly (issue 12, point 8). Each passes every test
 * darkroom made before a full decode: the right magic bytes, a header that parses, and
 * the structural check of integrity.ts (a JPEG ends with its EOI marker, a PNG's chunk
 * chain reaches IEND with every CRC right).
 */

/** Noise compresses badly, so the compressed data is long enough to damage in its middle. */
function noise(width: number, height: number, seed = 1): Buffer {
  const raw = Buffer.alloc(width * height * 3);
  for (let i = 0; i < raw.length; i++) raw[i] = ((i + seed) * 2654435761) >>> 24;
  return raw;
}

function chunk(type: string, data: Buffer): Buffer {
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const out = Buffer.alloc(body.length + 8);
  out.writeUInt32BE(data.length, 0);
  body.copy(out, 4);
  out.writeUInt32BE(crc32(body), body.length + 4);
  return out;
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** A PNG whose zlib stream is corrupt in its middle, with the IDAT chunk's CRC made right again. */
export async function corruptZlibPng(width = 120, height = 90): Promise<Buffer> {
  const png = Buffer.from(
    await sharp(noise(width, height), { raw: { width, height, channels: 3 } })
      .png()
      .toBuffer(),
  );
  let at = 8;
  while (png.toString('latin1', at + 4, at + 8) !== 'IDAT') at += 12 + png.readUInt32BE(at);
  const len = png.readUInt32BE(at);
  const mid = at + 8 + Math.floor(len / 2);
  for (let i = 0; i < 24; i++) png[mid + i] = png[mid + i]! ^ 0x5a;
  png.writeUInt32BE(crc32(png.subarray(at + 4, at + 8 + len)), at + 8 + len);
  return png;
}

/**
 * A decompression bomb's shape: a tiny, well-formed PNG whose header says `width`×`height`
 * (70000×70000 is 4.9 gigapixels, 14.7 GB of RGB once decoded).
 */
export function pngBomb(width = 70_000, height = 70_000): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // RGB
  // One row of zeros: a real bomb's IDAT is the same byte repeated, ~1 MB per 1,000 rows deflated.
  const idat = deflateSync(Buffer.alloc(1 + width * 3));
  return Buffer.concat([PNG_SIGNATURE, chunk('IHDR', ihdr), chunk('IDAT', idat), chunk('IEND', Buffer.alloc(0))]);
}

/** A JPEG cut short in its scan data, with an EOI marker put back at the end (as a copy tool that pads does). */
export async function truncatedJpeg(width = 160, height = 120): Promise<Buffer> {
  const jpeg = await sharp(noise(width, height, 7), { raw: { width, height, channels: 3 } })
    .jpeg({ quality: 90 })
    .toBuffer();
  return Buffer.concat([jpeg.subarray(0, Math.floor(jpeg.length * 0.6)), Buffer.from([0xff, 0xd9])]);
}

/**
 * A JPEG whose header says `width`×`height` (20000×14000 = 280 megapixels) and which holds
 * almost no scan data: only the header has to say so for the refusal to be tested.
 */
export function jpegHeaderOnly(width = 20_000, height = 14_000): Buffer {
  const seg = (marker: number, data: Buffer) => {
    const head = Buffer.from([0xff, marker, 0, 0]);
    head.writeUInt16BE(data.length + 2, 2);
    return Buffer.concat([head, data]);
  };
  const sof = Buffer.alloc(15);
  sof[0] = 8;
  sof.writeUInt16BE(height, 1);
  sof.writeUInt16BE(width, 3);
  sof[5] = 3;
  for (let c = 0; c < 3; c++) {
    sof[6 + c * 3] = c + 1;
    sof[7 + c * 3] = 0x11;
    sof[8 + c * 3] = 0;
  }
  const dqt = Buffer.concat([Buffer.from([0]), Buffer.alloc(64, 1)]);
  const sos = Buffer.from([3, 1, 0x00, 2, 0x11, 3, 0x11, 0, 63, 0]);
  return Buffer.concat([
    Buffer.from([0xff, 0xd8]),
    seg(0xdb, dqt),
    seg(0xc0, sof),
    seg(0xda, sos),
    Buffer.alloc(64, 0x55),
    Buffer.from([0xff, 0xd9]),
  ]);
}
