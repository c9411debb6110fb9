/**
 * What each capability does to the pixels. The simulator's results are real images with a
 * visible, checkable effect (dimensions, alpha, colour), so a client's download, checks and
 * output naming are exercised for real. They are stand-ins, not the service's models.
 */
import sharp from 'sharp';
import { CAPABILITIES, type Capability, type Resolution } from '../spec/capabilities.js';

export interface ProcessParams {
  mode?: string;
  resolution?: Resolution;
  style?: string;
}

export const DEFAULT_STYLES = ['sepia', 'noir', 'vivid', 'sketch'] as const;

/**
 * Spec gap: "upscale to 4K or 8K" with no rule. The sim multiplies each side by 2 for 4K (and
 * when no resolution is named) and by 4 for 8K, capped so the long side stays within
 * MAX_SIDE: a real target size would make small test images enormous.
 */
const MAX_SIDE = 16384;

/** The spec's format where it states one (background removal: PNG), else the sim's choice, JPEG. */
export function resultTypeFor(capability: Capability): 'jpeg' | 'png' {
  return CAPABILITIES[capability].resultFormat === 'png' ? 'png' : 'jpeg';
}

export async function processImage(capability: Capability, input: Buffer, params: ProcessParams): Promise<Buffer> {
  // rotate() with no angle applies EXIF orientation, as a photo service would.
  const oriented = sharp(input, { failOn: 'error' }).rotate();
  if (capability === 'remove-background') return removeBackground(oriented);
  // JPEG results carry no alpha; flattening onto white up front also keeps an alpha channel
  // out of convolutions, where libvips' premultiplication would zero the whole image.
  const img = oriented.flatten({ background: '#ffffff' });
  switch (capability) {
    case 'enhance':
      return img
        .sharpen({ sigma: params.mode === 'text' ? 1.5 : 1 })
        .jpeg({ quality: 92 })
        .toBuffer();
    case 'unblur':
      return img.sharpen({ sigma: 2.5, m1: 2, m2: 6 }).jpeg({ quality: 92 }).toBuffer();
    case 'restore':
      return restore(img);
    case 'colorize':
      // tint keeps luminance and replaces chroma, which on an old grey scan reads as colour.
      return img.tint({ r: 200, g: 150, b: 90 }).jpeg({ quality: 92 }).toBuffer();
    case 'upscale':
      return upscale(img, params.resolution === '8K' ? 4 : 2);
    case 'image2image':
      return stylize(img, params.style ?? 'vivid');
    default:
      // A capability the simulator has no picture of its own for: a visible change all the same.
      return img.modulate({ brightness: 1.05 }).jpeg({ quality: 92 }).toBuffer();
  }
}

/**
 * Dust and grain softened (a 3×3 median) and the contrast of a faded print raised by a fifth
 * about the photo's own mean: a restored photo looks like its original, only clearer, neither
 * darker nor lighter (a histogram stretch darkened a newcomer's whole first report).
 */
async function restore(img: sharp.Sharp): Promise<Buffer> {
  const { channels } = await img.clone().stats();
  const colour = channels.slice(0, channels.length >= 3 ? 3 : 1);
  const mean = colour.reduce((sum, c) => sum + c.mean, 0) / colour.length;
  const contrast = 1.2;
  return img
    .median(3)
    .linear(contrast, mean * (1 - contrast))
    .jpeg({ quality: 92 })
    .toBuffer();
}

async function upscale(img: sharp.Sharp, factor: number): Promise<Buffer> {
  const { data, info } = await img.toBuffer({ resolveWithObject: true });
  const f = Math.min(factor, MAX_SIDE / Math.max(info.width, info.height));
  const width = Math.max(1, Math.round(info.width * f));
  const height = Math.max(1, Math.round(info.height * f));
  return sharp(data).resize(width, height, { kernel: 'lanczos3', fit: 'fill' }).jpeg({ quality: 92 }).toBuffer();
}

/** Pixels close to the top-left corner's colour count as background and become transparent. */
async function removeBackground(img: sharp.Sharp): Promise<Buffer> {
  // sRGB first, so a grey or palette input still gives exactly four channels.
  const { data, info } = await img.toColourspace('srgb').ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  const { width, height } = info;
  if (info.channels !== 4) throw new Error(`expected RGBA, got ${info.channels} channels`);
  const r0 = data[0]!;
  const g0 = data[1]!;
  const b0 = data[2]!;
  const threshold = 48 * 48;
  for (let i = 0; i < width * height * 4; i += 4) {
    const dr = data[i]! - r0;
    const dg = data[i + 1]! - g0;
    const db = data[i + 2]! - b0;
    if (dr * dr + dg * dg + db * db <= threshold) data[i + 3] = 0;
  }
  return sharp(data, { raw: { width, height, channels: 4 } })
    .png()
    .toBuffer();
}

async function stylize(img: sharp.Sharp, style: string): Promise<Buffer> {
  switch (style) {
    case 'sepia':
      return img
        .recomb([
          [0.393, 0.769, 0.189],
          [0.349, 0.686, 0.168],
          [0.272, 0.534, 0.131],
        ])
        .jpeg({ quality: 90 })
        .toBuffer();
    case 'noir':
      return img
        .greyscale()
        .linear(1.6, -0.3 * 255)
        .jpeg({ quality: 90 })
        .toBuffer();
    case 'sketch':
      return sketch(img);
    case 'vivid':
    default:
      return img.modulate({ saturation: 2.2, brightness: 1.05 }).jpeg({ quality: 90 }).toBuffer();
  }
}

/**
 * Dark pencil lines on white where the picture has edges. Done by hand on raw pixels because
 * sharp applies negate() before convolve() whatever the call order.
 */
async function sketch(img: sharp.Sharp): Promise<Buffer> {
  const { data, info } = await img.greyscale().raw().toBuffer({ resolveWithObject: true });
  const { width, height, channels } = info;
  const at = (x: number, y: number) =>
    data[(Math.min(height - 1, Math.max(0, y)) * width + Math.min(width - 1, Math.max(0, x))) * channels]!;
  const out = Buffer.alloc(width * height);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const lap =
        8 * at(x, y) -
        at(x - 1, y - 1) -
        at(x, y - 1) -
        at(x + 1, y - 1) -
        at(x - 1, y) -
        at(x + 1, y) -
        at(x - 1, y + 1) -
        at(x, y + 1) -
        at(x + 1, y + 1);
      out[y * width + x] = 255 - Math.min(255, Math.abs(lap) * 2);
    }
  }
  return sharp(out, { raw: { width, height, channels: 1 } })
    .jpeg({ quality: 90 })
    .toBuffer();
}
