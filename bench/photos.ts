/**
 * The benchmark's photos: tiny valid PNGs (1×1 grey) made distinct by a tEXt chunk, built
 * from precomputed chunks so that 10,000 of them are written in about a second (sharp takes
 * minutes for as many). With `processing: 'passthrough'` the simulator serves them back as
 * results, so their size is all the disk and memory the run pays for pixels.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { crc32, deflateSync } from 'node:zlib';

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

function chunk(type: string, data: Buffer): Buffer {
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const out = Buffer.alloc(body.length + 8);
  out.writeUInt32BE(data.length, 0);
  body.copy(out, 4);
  out.writeUInt32BE(crc32(body), body.length + 4);
  return out;
}

const IHDR = chunk('IHDR', Buffer.from([0, 0, 0, 1, 0, 0, 0, 1, 8, 0, 0, 0, 0])); // 1×1, 8-bit grey
const IDATS = Array.from({ length: 256 }, (_, v) => chunk('IDAT', deflateSync(Buffer.from([0, v]))));
const IEND = chunk('IEND', Buffer.alloc(0));

/** Photo `i`: its grey level and its tEXt comment both vary with i, so every file's bytes differ. */
export function tinyPng(i: number): Buffer {
  const text = chunk('tEXt', Buffer.from(`Comment\0darkroom bench photo ${i}`, 'latin1'));
  return Buffer.concat([SIGNATURE, IHDR, text, IDATS[i % 256]!, IEND]);
}

/** Where photo `i` lives under the input folder: 100 a folder, like a scanned archive's boxes. */
export function photoPath(i: number): string {
  return `box-${String(Math.floor(i / 100)).padStart(3, '0')}/photo-${String(i).padStart(5, '0')}.png`;
}

/** Write `n` distinct photos under `dir`. */
export function writePhotos(dir: string, n: number): void {
  const made = new Set<string>();
  for (let i = 0; i < n; i++) {
    const file = path.join(dir, photoPath(i));
    const sub = path.dirname(file);
    if (!made.has(sub)) {
      mkdirSync(sub, { recursive: true });
      made.add(sub);
    }
    writeFileSync(file, tinyPng(i));
  }
}
