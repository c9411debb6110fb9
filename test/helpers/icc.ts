/**
 * ICC profiles for test inputs, built as version 2 matrix/TRC profiles by src/inputs/icc.ts:
 * libvips ships sRGB, Display P3 and CMYK, but no ProPhoto RGB, Adobe RGB or grey profile,
 * and none is in any npm package the tests may use.
 */
import { curvTag, D50, descTag, iccProfile, textTag, xyzTag, type Xyz } from '../../src/inputs/icc.js';

export { rgbProfile } from '../../src/inputs/icc.js';

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

/** A grey profile with this gamma (a scanner's "Gray Gamma 2.2"). */
export function greyProfile(description: string, gamma: number): Buffer {
  return iccProfile('GRAY', [
    ['desc', descTag(description)],
    ['cprt', textTag('test profile')],
    ['wtpt', xyzTag(D50)],
    ['kTRC', curvTag(gamma)],
  ]);
}
