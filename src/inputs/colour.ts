import exifReader from 'exif-reader';
import { parse as parseIcc } from 'icc';

/**
 * Whether a photo's numbers are sRGB, as the service assumes. A scan in ProPhoto RGB or
 * Adobe RGB, a Display P3 photo, a grey scan with its own profile or a CMYK file carries
 * numbers that mean other colours in sRGB: sent as they are, they come back washed out or
 * shifted. Such a photo is converted to sRGB before upload (transcode.ts, sharp with its
 * embedded profile); the master on disk is never touched.
 *
 * An RGB profile counts as sRGB when its primaries are sRGB's and its tone curve a gamma
 * near sRGB's: that is sRGB whatever its profile is called (camera makers, browsers and
 * Facebook's tiny "c2" profile all describe sRGB under other names). icc (by sharp's
 * author) reads the profile's header and description; the primaries are read here.
 */

/** sRGB's primaries adapted to D50, the profile connection space: rXYZ, gXYZ, bXYZ (IEC 61966-2-1 as ICC profiles state them). */
const SRGB_PRIMARIES: Readonly<Record<string, readonly [number, number, number]>> = {
  rXYZ: [0.4361, 0.2225, 0.0139],
  gXYZ: [0.3851, 0.7169, 0.0971],
  bXYZ: [0.1431, 0.0606, 0.7141],
};
/** How far a primary may be from sRGB's and still be sRGB: rounding in real profiles is below 0.002. */
const PRIMARY_TOLERANCE = 0.01;

/**
 * Why the photo is not sRGB (its profile's name, "CMYK"…), or null when it is sRGB or
 * untagged RGB or grey (which every tool, the service included, reads as sRGB). A profile
 * that cannot be read is left alone: the photo goes as it is, as before profiles were read.
 */
export function notSrgb(profile: Buffer | undefined, space: string | undefined): string | null {
  if (space === 'cmyk') return `CMYK${profile ? ` (${describe(profile) ?? 'embedded profile'})` : ''}`;
  if (!profile || profile.length < 132) return null;
  let colorSpace: string | undefined;
  let description: string | undefined;
  try {
    const p = parseIcc(profile);
    colorSpace = p.colorSpace?.trim();
    description = p.description?.replace(/\0+$/, '').trim();
  } catch {
    return null;
  }
  const name = description || 'unnamed';
  if (colorSpace === 'GRAY') return `grey colour profile "${name}"`;
  if (colorSpace !== 'RGB') return `${colorSpace ?? 'unknown'} colour profile "${name}"`;
  return isSrgbLike(profile) ? null : `colour profile "${name}"`;
}

function describe(profile: Buffer): string | null {
  try {
    return parseIcc(profile).description?.replace(/\0+$/, '').trim() || null;
  } catch {
    return null;
  }
}

/** sRGB's primaries, and a tone curve that is a gamma between 1.8 and 2.6 or a table (sRGB's own is a table). */
function isSrgbLike(profile: Buffer): boolean {
  const tags = tagTable(profile);
  for (const [sig, want] of Object.entries(SRGB_PRIMARIES)) {
    const xyz = readXyz(profile, tags.get(sig));
    if (xyz === null || xyz.some((v, i) => Math.abs(v - want[i]!) > PRIMARY_TOLERANCE)) return false;
  }
  const gamma = curveGamma(profile, tags.get('rTRC'));
  return gamma === 'table' || (gamma !== null && gamma >= 1.8 && gamma <= 2.6);
}

function tagTable(b: Buffer): Map<string, { offset: number; size: number }> {
  const tags = new Map<string, { offset: number; size: number }>();
  const count = b.readUInt32BE(128);
  for (let i = 0; i < count && 132 + i * 12 + 12 <= b.length; i++) {
    const at = 132 + i * 12;
    tags.set(b.toString('latin1', at, at + 4), { offset: b.readUInt32BE(at + 4), size: b.readUInt32BE(at + 8) });
  }
  return tags;
}

function readXyz(b: Buffer, tag: { offset: number; size: number } | undefined): [number, number, number] | null {
  if (!tag || tag.size < 20 || tag.offset + 20 > b.length || b.toString('latin1', tag.offset, tag.offset + 4) !== 'XYZ ') return null;
  const s15 = (o: number) => b.readInt32BE(tag.offset + o) / 65536;
  return [s15(8), s15(12), s15(16)];
}

/** A `curv` of one entry (a gamma), or a parametric `para` curve's gamma; 'table' for a sampled curve; null for none or linear. */
function curveGamma(b: Buffer, tag: { offset: number; size: number } | undefined): number | 'table' | null {
  if (!tag || tag.offset + 12 > b.length) return null;
  const type = b.toString('latin1', tag.offset, tag.offset + 4);
  if (type === 'curv') {
    const n = b.readUInt32BE(tag.offset + 8);
    if (n === 0) return null;
    if (n === 1) return tag.offset + 14 <= b.length ? b.readUInt16BE(tag.offset + 12) / 256 : null;
    return 'table';
  }
  if (type === 'para' && tag.offset + 16 <= b.length) return b.readInt32BE(tag.offset + 12) / 65536;
  return null;
}

/** Adobe RGB (1998)'s primaries as EXIF's PrimaryChromaticities states them: x, y of red, green, blue. */
const ADOBE_RGB_XY = [0.64, 0.33, 0.21, 0.71, 0.15, 0.06];

/**
 * "Adobe RGB" said by a camera JPEG's EXIF alone, with no ICC profile: DCF's option file
 * (InteropIndex R03), ColorSpace 2 (as some cameras write it), or ColorSpace "uncalibrated"
 * (0xFFFF) with Adobe RGB's primaries stated. Such numbers are Adobe RGB's, and are
 * converted as an Adobe RGB profile would have them (transcode.ts). ColorSpace 1 (sRGB)
 * is believed over an interop index that says otherwise. Null when EXIF says nothing of it.
 */
export function exifColour(exif: Buffer | undefined): string | null {
  if (!exif || exif.length < 14) return null;
  let t: ReturnType<typeof exifReader>;
  try {
    t = exifReader(exif);
  } catch {
    return null;
  }
  const cs = t.Photo?.ColorSpace;
  if (cs === 1) return null;
  if (String(t.Iop?.InteroperabilityIndex ?? '').trim() === 'R03') return 'Adobe RGB (EXIF InteropIndex R03)';
  if (cs === 2) return 'Adobe RGB (EXIF ColorSpace 2)';
  const xy = t.Image?.PrimaryChromaticities;
  if (cs === 0xffff && Array.isArray(xy) && xy.length === 6 && xy.every((v, i) => Math.abs(Number(v) - ADOBE_RGB_XY[i]!) < 0.005)) {
    return 'Adobe RGB (EXIF ColorSpace uncalibrated, Adobe RGB primaries)';
  }
  return null;
}

/** A JPEG with an ICC profile put in (APP2, after SOI): the bytes sharp converts through it. */
export function withIccProfile(jpeg: Buffer, profile: Buffer): Buffer {
  const head = Buffer.alloc(4);
  head[0] = 0xff;
  head[1] = 0xe2;
  head.writeUInt16BE(2 + 14 + profile.length, 2);
  return Buffer.concat([jpeg.subarray(0, 2), head, Buffer.from('ICC_PROFILE\0', 'latin1'), Buffer.from([1, 1]), profile, jpeg.subarray(2)]);
}
