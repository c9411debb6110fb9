import sharp from 'sharp';
import type { ImageType } from '../spec/images.js';

/**
 * Whether an input image is whole, checked before its upload spends a call: a truncated
 * scan would upload, be charged, and come back as a damaged result.
 *
 * First the cheap structural test (microseconds, no decode): a JPEG ends with its EOI
 * marker, a PNG's chunk chain reaches IEND, a WEBP's RIFF size fits in the file. Nearly
 * every good file passes it. A file that does not — truncated, or a JPEG with bytes after
 * its EOI, which some cameras write — is decoded by sharp with `failOn: 'truncated'`,
 * shrunk on load (3–6 ms for a 300 kB image), and only a decode error refuses it.
 *
 * Returns null when the image is whole, else the reason it is refused.
 */
export async function checkWhole(bytes: Buffer, type: ImageType): Promise<string | null> {
  if (structurallyWhole(bytes, type)) return null;
  try {
    await sharp(bytes, { failOn: 'truncated' }).resize(32, 32, { fit: 'inside' }).raw().toBuffer();
    return null;
  } catch (err) {
    const detail = String((err as Error).message ?? err).split('\n')[0];
    return `truncated or damaged ${type === 'jpeg' ? 'JPG' : type.toUpperCase()} (${detail})`;
  }
}

function structurallyWhole(bytes: Buffer, type: ImageType): boolean {
  switch (type) {
    case 'jpeg':
      return bytes.length >= 4 && bytes[bytes.length - 2] === 0xff && bytes[bytes.length - 1] === 0xd9;
    case 'png': {
      let at = 8;
      while (at + 8 <= bytes.length) {
        const length = bytes.readUInt32BE(at);
        const kind = bytes.toString('latin1', at + 4, at + 8);
        const end = at + 12 + length;
        if (end > bytes.length) return false;
        if (kind === 'IEND') return true;
        at = end;
      }
      return false;
    }
    case 'webp':
      return bytes.length >= 12 && 8 + bytes.readUInt32LE(4) <= bytes.length;
  }
}
