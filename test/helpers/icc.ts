/**
 * ICC profiles for test inputs, built by hand as version 2 matrix/TRC profiles (the kind
 * scanners and Photoshop embed): libvips ships sRGB, Display P3 and CMYK, but no ProPhoto
 * RGB, Adobe RGB or grey profile, and none is in any npm package the tests may use.
 */

type Xyz = readonly [number, number, number];

/** ProPhoto RGB (ROMM RGB): D50 primaries, gamma 1.8. */
export const PROPHOTO = {
  description: 'ProPhoto RGB',
  r: [0.7977, 0.288, 0.0] as Xyz,
  g: [0.1352, 0.7119, 0.0] as Xyz,
  b: [0.0313, 0.0001, 0.8249] as Xyz,
  gamma: 1.8,
};
/** Adobe RGB (1998), adapted to D50, gamma 2.2. */
export const ADOBE_RGB = {
  description: 'Adobe RGB (1998)',
  r: [0.6097, 0.3111, 0.0195] as Xyz,
  g: [0.2053, 0.6257, 0.0609] as Xyz,
  b: [0.1492, 0.0632, 0.7446] as Xyz,
  gamma: 2.2,
};
/** sRGB's primaries under another name, as cameras and browsers embed it. */
export const SRGB_RENAMED = {
  description: 'Camera RGB (sRGB)',
  r: [0.4361, 0.2225, 0.0139] as Xyz,
  g: [0.3851, 0.7169, 0.0971] as Xyz,
  b: [0.1431, 0.0606, 0.7141] as Xyz,
  gamma: 2.2,
};

const D50: Xyz = [0.9642, 1.0, 0.8249];

function s15(v: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeInt32BE(Math.round(v * 65536));
  return b;
}

function xyzTag(v: Xyz): Buffer {
  return Buffer.concat([Buffer.from('XYZ '), Buffer.alloc(4), s15(v[0]), s15(v[1]), s15(v[2])]);
}

function curvTag(gamma: number): Buffer {
  const b = Buffer.alloc(14);
  b.write('curv', 0, 'latin1');
  b.writeUInt32BE(1, 8);
  b.writeUInt16BE(Math.round(gamma * 256), 12);
  return b;
}

function descTag(text: string): Buffer {
  const ascii = Buffer.from(`${text}\0`, 'latin1');
  const head = Buffer.alloc(12);
  head.write('desc', 0, 'latin1');
  head.writeUInt32BE(ascii.length, 8);
  // Unicode language code and count (0), ScriptCode code and count (0), 67 bytes of ScriptCode.
  return Buffer.concat([head, ascii, Buffer.alloc(8), Buffer.alloc(3), Buffer.alloc(67)]);
}

function textTag(text: string): Buffer {
  return Buffer.concat([Buffer.from('text'), Buffer.alloc(4), Buffer.from(`${text}\0`, 'latin1')]);
}

function pad4(b: Buffer): Buffer {
  return b.length % 4 === 0 ? b : Buffer.concat([b, Buffer.alloc(4 - (b.length % 4))]);
}

function profile(space: 'RGB ' | 'GRAY', tags: [string, Buffer][]): Buffer {
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
export function rgbProfile(p: { description: string; r: Xyz; g: Xyz; b: Xyz; gamma: number }): Buffer {
  const trc = curvTag(p.gamma);
  return profile('RGB ', [
    ['desc', descTag(p.description)],
    ['cprt', textTag('test profile')],
    ['wtpt', xyzTag(D50)],
    ['rXYZ', xyzTag(p.r)],
    ['gXYZ', xyzTag(p.g)],
    ['bXYZ', xyzTag(p.b)],
    ['rTRC', trc],
    ['gTRC', trc],
    ['bTRC', trc],
  ]);
}

/** A grey profile with this gamma (a scanner's "Gray Gamma 2.2"). */
export function greyProfile(description: string, gamma: number): Buffer {
  return profile('GRAY', [
    ['desc', descTag(description)],
    ['cprt', textTag('test profile')],
    ['wtpt', xyzTag(D50)],
    ['kTRC', curvTag(gamma)],
  ]);
}
