/**
 * ICC profiles built as version 2 matrix/TRC profiles (the kind scanners and Photoshop
 * embed). libvips ships sRGB, Display P3 and CMYK, but no Adobe RGB: a camera JPEG that
 * says "Adobe RGB" only in EXIF (colour.ts) is given this one, built from Adobe RGB
 * (1998)'s published primaries and gamma, for sharp to convert it through.
 */

export type Xyz = readonly [number, number, number];

/** An RGB space: its primaries adapted to D50 and its tone curve's gamma. */
export interface RgbSpace {
  readonly description: string;
  readonly r: Xyz;
  readonly g: Xyz;
  readonly b: Xyz;
  readonly gamma: number;
  readonly copyright?: string;
}

/** Adobe RGB (1998): its primaries adapted to D50, gamma 563/256 (2.2 as a one-entry curve stores it). */
export const ADOBE_RGB: RgbSpace = {
  description: 'Adobe RGB (1998) compatible',
  r: [0.6097, 0.3111, 0.0195],
  g: [0.2053, 0.6257, 0.0609],
  b: [0.1492, 0.0632, 0.7446],
  gamma: 2.2,
};

export const D50: Xyz = [0.9642, 1.0, 0.8249];

function s15(v: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeInt32BE(Math.round(v * 65536));
  return b;
}

export function xyzTag(v: Xyz): Buffer {
  return Buffer.concat([Buffer.from('XYZ '), Buffer.alloc(4), s15(v[0]), s15(v[1]), s15(v[2])]);
}

export function curvTag(gamma: number): Buffer {
  const b = Buffer.alloc(14);
  b.write('curv', 0, 'latin1');
  b.writeUInt32BE(1, 8);
  b.writeUInt16BE(Math.round(gamma * 256), 12);
  return b;
}

export function descTag(text: string): Buffer {
  const ascii = Buffer.from(`${text}\0`, 'latin1');
  const head = Buffer.alloc(12);
  head.write('desc', 0, 'latin1');
  head.writeUInt32BE(ascii.length, 8);
  // Unicode language code and count (0), ScriptCode code and count (0), 67 bytes of ScriptCode.
  return Buffer.concat([head, ascii, Buffer.alloc(8), Buffer.alloc(3), Buffer.alloc(67)]);
}

export function textTag(text: string): Buffer {
  return Buffer.concat([Buffer.from('text'), Buffer.alloc(4), Buffer.from(`${text}\0`, 'latin1')]);
}

function pad4(b: Buffer): Buffer {
  return b.length % 4 === 0 ? b : Buffer.concat([b, Buffer.alloc(4 - (b.length % 4))]);
}

export function iccProfile(space: 'RGB ' | 'GRAY', tags: [string, Buffer][]): Buffer {
  const count = tags.length;
  let offset = 128 + 4 + count * 12;
  const table = Buffer.alloc(4 + count * 12);
  table.writeUInt32BE(count, 0);
  const data: Buffer[] = [];
  tags.forEach(([sig, body], i) => {
    const padded = pad4(body);
    table.write(sig, 4 + i * 12, 'latin1');
    table.writeUInt32BE(offset, 8 + i * 12);
    table.writeUInt32BE(body.length, 12 + i * 12);
    data.push(padded);
    offset += padded.length;
  });
  const header = Buffer.alloc(128);
  header.writeUInt32BE(offset, 0);
  header.write('lcms', 4, 'latin1');
  header.writeUInt32BE(0x02100000, 8);
  header.write('mntr', 12, 'latin1');
  header.write(space, 16, 'latin1');
  header.write('XYZ ', 20, 'latin1');
  header.writeUInt16BE(2026, 24);
  header.writeUInt16BE(1, 26);
  header.writeUInt16BE(1, 28);
  header.write('acsp', 36, 'latin1');
  s15(D50[0]).copy(header, 68);
  s15(D50[1]).copy(header, 72);
  s15(D50[2]).copy(header, 76);
  return Buffer.concat([header, table, ...data]);
}

/** An RGB matrix/TRC profile with these primaries and gamma. */
export function rgbProfile(p: RgbSpace): Buffer {
  const trc = curvTag(p.gamma);
  return iccProfile('RGB ', [
    ['desc', descTag(p.description)],
    ['cprt', textTag(p.copyright ?? 'No copyright, use freely')],
    ['wtpt', xyzTag(D50)],
    ['rXYZ', xyzTag(p.r)],
    ['gXYZ', xyzTag(p.g)],
    ['bXYZ', xyzTag(p.b)],
    ['rTRC', trc],
    ['gTRC', trc],
    ['bTRC', trc],
  ]);
}
