import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { ExifToolProcess } from '../../src/metadata/exiftool.js';
import type { CarryRequest, CarryResult, MetadataWriter } from '../../src/metadata/writer.js';
import { writeLayout } from '../../src/outputs/layout.js';

/**
 * Test inputs with real metadata, written by ExifTool as digiKam, Lightroom and scanning
 * software write it, and outputs read back by ExifTool: the field's own tool on both sides.
 */
export class Exif {
  private readonly tool = new ExifToolProcess({ maxProcs: 1 });

  /** Write tags (ExifTool arguments, `-TAG=value`) into `file` in place. */
  async write(file: string, args: readonly string[]): Promise<void> {
    await this.tool.run(['-overwrite_original', ...args, file]);
  }

  /** Every tag as `Group1:Name` → value; `-n` gives numbers (GPS as decimals, Orientation as 1–8). */
  async read(file: string, numeric = false): Promise<Record<string, unknown>> {
    const out = await this.tool.run(['-j', '-G1', '-struct', '-a', ...(numeric ? ['-n'] : []), file]);
    return (JSON.parse(out.stdout) as Record<string, unknown>[])[0] ?? {};
  }

  end(): Promise<void> {
    return this.tool.end();
  }
}

/**
 * A scanned print's metadata as scanning software and a photo manager leave it, as
 * ExifTool arguments: the date, the scanner, GPS, IPTC caption, keywords, by-line and
 * copyright, XMP title, subject, creator, rights and an approximate date ("1962").
 */
export const SCAN_TAGS: readonly string[] = [
  '-EXIF:DateTimeOriginal=1962:07:14 10:30:00',
  '-EXIF:Make=Epson',
  '-EXIF:Model=Perfection V850',
  '-GPSLatitude=48.8566',
  '-GPSLatitudeRef=N',
  '-GPSLongitude=2.3522',
  '-GPSLongitudeRef=E',
  '-IPTC:Caption-Abstract=Grandma at the beach, 1962',
  '-IPTC:Keywords=beach',
  '-IPTC:Keywords=family',
  '-IPTC:By-line=J. Doe',
  '-IPTC:CopyrightNotice=© Doe family',
  '-XMP-dc:Title=The beach',
  '-XMP-dc:Subject=beach',
  '-XMP-dc:Subject=family',
  '-XMP-dc:Creator=J. Doe',
  '-XMP-dc:Rights=© Doe family',
  '-XMP-photoshop:DateCreated=1962',
];

/** A small photo of one colour, as a JPEG, PNG or TIFF. */
export async function solid(
  file: string,
  width: number,
  height: number,
  rgb: [number, number, number],
  format: 'jpeg' | 'png' | 'tiff' | 'webp',
): Promise<void> {
  mkdirSync(path.dirname(file), { recursive: true });
  const img = sharp({ create: { width, height, channels: 3, background: { r: rgb[0], g: rgb[1], b: rgb[2] } } });
  await (format === 'jpeg' ? img.jpeg() : format === 'png' ? img.png() : format === 'tiff' ? img.tiff() : img.webp()).toFile(file);
}

/** A photo whose numbers are in the colour space of `profile` (an .icc file), the profile embedded. */
export async function inProfile(file: string, profileFile: string, rgb: [number, number, number]): Promise<void> {
  await sharp({ create: { width: 32, height: 24, channels: 3, background: { r: rgb[0], g: rgb[1], b: rgb[2] } } })
    .withIccProfile(profileFile)
    .png()
    .toFile(file);
}

/** The decoded pixels' fingerprint: two files with equal pixels have equal prints, whatever their metadata. */
export async function pixelPrint(file: string | Buffer): Promise<string> {
  const { data, info } = await sharp(file, { ignoreIcc: true } as sharp.SharpOptions)
    .raw()
    .toBuffer({ resolveWithObject: true });
  return `${info.width}x${info.height}x${info.channels}:${createHash('sha256').update(data).digest('hex')}`;
}

/** The numbers of the first pixel, as stored (no colour management). */
export async function storedPixel(file: string | Buffer): Promise<number[]> {
  return [
    ...(
      await sharp(file, { ignoreIcc: true } as sharp.SharpOptions)
        .raw()
        .toBuffer()
    ).subarray(0, 3),
  ];
}

export function sha256Of(file: string): string {
  return createHash('sha256').update(readFileSync(file)).digest('hex');
}

export function writeProfile(dir: string, name: string, bytes: Buffer): string {
  const file = path.join(dir, `${name}.icc`);
  writeFileSync(file, bytes);
  return file;
}

/** MetadataWriter.carry, its layout written to `out` as the download stage writes it (outputs/layout.ts). */
export async function carryTo(writer: MetadataWriter, req: CarryRequest, out: string): Promise<CarryResult> {
  const r = await writer.carry(req);
  try {
    if (r.layout === null) copyFileSync(req.raw as string, out);
    else renameSync((await writeLayout(path.dirname(out), out, r.layout)).file, out);
  } finally {
    r.release();
  }
  return r;
}
