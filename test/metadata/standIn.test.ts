import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import sharp from 'sharp';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { Provenance } from '../../src/metadata/provenance.js';
import { pngChunk, standInOf } from '../../src/metadata/standIn.js';
import type { OutputKind } from '../../src/metadata/tags.js';
import { MetadataWriter } from '../../src/metadata/writer.js';
import { makeJob, makeTempDir } from '../helpers/job.js';
import { carryTo, Exif, SCAN_TAGS, sha256Of, solid } from '../helpers/metadata.js';
import { writeLayout } from '../../src/outputs/layout.js';
import { nodeOutputFs } from '../../src/outputs/outputfs.js';
import { writeSplicedAtomically } from '../../src/outputs/splice.js';
import { simulate } from '../helpers/simulate.js';

/**
 * The metadata of an output of any size is written through a stand-in (metadata/standIn.ts):
 * ExifTool rewrites the file without its image data, and the data is put back. The output
 * must be byte for byte what ExifTool makes of the whole file, keep every chunk the service
 * sent, and ExifTool's part of it must be the metadata alone.
 */

const exif = new Exif();
const spliced = new MetadataWriter({ maxProcs: 1 });
const whole = new MetadataWriter({ maxProcs: 1, splice: false });
const dirs: string[] = [];
afterEach(() => {
  while (dirs.length) rmSync(dirs.pop()!, { recursive: true, force: true });
});
afterAll(async () => {
  await Promise.all([spliced.end(), whole.end(), exif.end()]);
});

const PROVENANCE: Provenance = {
  aiSystem: 'Example API',
  agent: 'darkroom 0.0.0',
  original: { path: 'box 1/scan.jpg', sha256: 'cd'.repeat(32) },
  steps: [{ action: 'resized', whenMs: Date.UTC(2026, 10, 27, 10), parameters: 'capability=upscale; task=t-9' }],
  identity: 'stand-in',
};

/** A JPEG with an MPF segment (the header of a multi-picture file) after its SOI. */
async function mpfJpeg(file: string): Promise<string> {
  await solid(file, 32, 32, [1, 2, 3], 'jpeg');
  const b = readFileSync(file);
  // APP2, 14 bytes: "MPF\0" and a big-endian TIFF header (its IFD at offset 8).
  const mpf = Buffer.concat([Buffer.from([0xff, 0xe2, 0x00, 0x0e]), Buffer.from('MPF\0MM\0*\0\0\0\x08', 'latin1')]);
  writeFileSync(file, Buffer.concat([b.subarray(0, 2), mpf, b.subarray(2)]));
  return file;
}

/** PNG chunks in order: type, and the data's SHA-256 for any chunk over 1 KiB. */
function chunksOf(png: Buffer): { type: string; len: number; data: Buffer }[] {
  const out = [];
  for (let at = 8; at < png.length;) {
    const len = png.readUInt32BE(at);
    out.push({ type: png.toString('latin1', at + 4, at + 8), len, data: png.subarray(at + 8, at + 8 + len) });
    at += 12 + len;
  }
  return out;
}

/**
 * A service's PNG as the issue met it: a picture, a large private chunk before its image data,
 * text and another large private chunk after it, and its own EXIF (an orientation, a thumbnail).
 */
async function servicePng(file: string): Promise<void> {
  const noise = { type: 'gaussian' as const, mean: 128, sigma: 40 };
  const png = await sharp({ create: { width: 300, height: 200, channels: 3, background: '#000', noise } })
    .png({ compressionLevel: 1 })
    .toBuffer();
  const chunks = chunksOf(png);
  const ihdr = png.subarray(0, 8 + 12 + 13);
  const rest = png.subarray(8 + 12 + 13);
  const iend = rest.subarray(rest.length - 12);
  const body = rest.subarray(0, rest.length - 12);
  expect(chunks[0]!.type).toBe('IHDR');
  writeFileSync(
    file,
    Buffer.concat([
      ihdr,
      pngChunk('prVa', randomBytes(300 * 1024)),
      body,
      pngChunk('tEXt', Buffer.from('Comment\0made by the service')),
      pngChunk('prVb', randomBytes(500 * 1024)),
      pngChunk('prVb', randomBytes(200 * 1024)),
      iend,
    ]),
  );
  await exif.write(file, ['-EXIF:Software=Service 2.1', '-XMP-dc:Format=image/png']);
}

async function serviceFile(dir: string, kind: OutputKind): Promise<string> {
  const file = path.join(dir, `raw.${kind === 'jpeg' ? 'jpg' : kind}`);
  if (kind === 'png') {
    await servicePng(file);
    return file;
  }
  const noise = { type: 'gaussian' as const, mean: 100, sigma: 50 };
  const img = sharp({ create: { width: 640, height: 480, channels: 4, background: '#000', noise } });
  if (kind === 'jpeg') {
    writeFileSync(file, Buffer.concat([await img.jpeg({ quality: 90 }).toBuffer(), Buffer.from('a trailer after EOI')]));
    await exif.write(file, ['-EXIF:Software=Service 2.1', '-EXIF:Orientation#=1', '-ICC_Profile<=/dev/null']);
  } else {
    writeFileSync(file, await img.webp({ lossless: true }).toBuffer());
  }
  return file;
}

describe('an output written through a stand-in', () => {
  for (const kind of ['jpeg', 'png', 'webp'] as const) {
    it(`is, for a ${kind.toUpperCase()}, what ExifTool makes of the whole file, with ExifTool's part the metadata alone`, async () => {
      const d = makeTempDir('darkroom-standin-');
      dirs.push(d);
      const input = path.join(d, 'scan.jpg');
      await solid(input, 64, 48, [200, 150, 100], 'jpeg');
      await exif.write(input, [...SCAN_TAGS]);
      const raw = await serviceFile(d, kind);
      const req = { raw, kind, level: 'all' as const, source: { file: input }, provenance: PROVENANCE };
      const ext = path.extname(raw);
      const a = await carryTo(spliced, req, path.join(d, `spliced${ext}`));
      const b = await carryTo(whole, req, path.join(d, `whole${ext}`));
      expect(a).toMatchObject({ carried: 'all', note: null, toSidecar: false });
      expect(b.carried).toBe('all');
      const out = readFileSync(path.join(d, `spliced${ext}`));
      expect(out.equals(readFileSync(path.join(d, `whole${ext}`))), 'byte for byte').toBe(true);
      // ExifTool's part is the metadata; the rest are ranges of the service's file.
      const theirs = a.layout!.filter((p): p is Buffer => Buffer.isBuffer(p)).reduce((n, p) => n + p.length, 0);
      const ours = a
        .layout!.filter((p) => !Buffer.isBuffer(p))
        .reduce((n, p) => n + (p as { end: number; start: number }).end - (p as { start: number }).start, 0);
      expect(theirs).toBeLessThan(64 * 1024);
      expect(ours).toBeGreaterThan(statSync(raw).size * 0.7);
      const t = await exif.read(path.join(d, `spliced${ext}`));
      expect(t['XMP-iptcExt:DigitalSourceType']).toMatch(/compositeWithTrainedAlgorithmicMedia$/);
      expect(t['XMP-dc:Title']).toBe('The beach');
    });
  }

  it('keeps every chunk of a PNG the service sent, in order, and moves its text before the image data as ExifTool does', async () => {
    const d = makeTempDir('darkroom-standin-');
    dirs.push(d);
    const raw = await serviceFile(d, 'png');
    const out = path.join(d, 'out.png');
    await carryTo(spliced, { raw, kind: 'png', level: 'basic', source: { none: 'a URL input' }, provenance: PROVENANCE }, out);
    const served = chunksOf(readFileSync(raw)).filter((c) => !['tEXt', 'iTXt', 'eXIf'].includes(c.type));
    const written = chunksOf(readFileSync(out));
    let i = 0;
    for (const c of written) if (i < served.length && c.type === served[i]!.type && c.data.equals(served[i]!.data)) i++;
    expect(i, 'every served chunk, in its order').toBe(served.length);
    expect(written.findIndex((c) => c.type === 'iTXt')).toBeLessThan(written.findIndex((c) => c.type === 'IDAT'));
    expect(await sharp(out).raw().toBuffer()).toEqual(await sharp(raw).raw().toBuffer());
  });

  it('is not made of a JPEG whose MPF segment points at pictures after its scan, nor of a file cut short', async () => {
    const d = makeTempDir('darkroom-standin-');
    dirs.push(d);
    const jpg = await mpfJpeg(path.join(d, 'a.jpg'));
    expect(await standInOf(jpg, 'jpeg')).toMatch(/MPF/);
    const png = path.join(d, 'a.png');
    await solid(png, 32, 32, [1, 2, 3], 'png');
    writeFileSync(png, readFileSync(png).subarray(0, 60));
    expect(await standInOf(png, 'png')).toMatch(/runs past the end|without its IEND/);
  });

  it('falls back to ExifTool on the whole file when it is small, and to an XMP sidecar when it is not', async () => {
    const d = makeTempDir('darkroom-standin-');
    dirs.push(d);
    const jpg = await mpfJpeg(path.join(d, 'mpf.jpg'));
    const req = { raw: jpg, kind: 'jpeg' as const, level: 'all' as const, source: { none: 'x' }, provenance: PROVENANCE };
    const small = await carryTo(spliced, req, path.join(d, 'small.jpg'));
    expect(small).toMatchObject({ carried: 'provenance', toSidecar: false });
    expect((await exif.read(path.join(d, 'small.jpg')))['XMP-iptcExt:DigitalSourceType']).toBeDefined();
    const tiny = new MetadataWriter({ maxProcs: 1, wholeRewriteMax: 100 });
    try {
      const big = await carryTo(tiny, req, path.join(d, 'big.jpg'));
      expect(big).toMatchObject({ carried: 'none', toSidecar: true, layout: null });
      expect(big.note).toMatch(
        /^metadata in the XMP sidecar beside it: a JPEG with an MPF segment .*; at 0 MiB it is over the 0 MiB ExifTool rewrites whole$/,
      );
      expect(readFileSync(path.join(d, 'big.jpg')).equals(readFileSync(jpg))).toBe(true);
    } finally {
      await tiny.end();
    }
  });
});

/** A service's PNG as the big-output bench serves it: a picture, then large private chunks after its image data, its own EXIF. */
async function benchPng(file: string): Promise<void> {
  const png = await sharp({
    create: { width: 200, height: 100, channels: 3, background: '#000', noise: { type: 'gaussian', mean: 90, sigma: 30 } },
  })
    .png({ compressionLevel: 1 })
    .toBuffer();
  const iend = png.subarray(png.length - 12);
  writeFileSync(
    file,
    Buffer.concat([
      png.subarray(0, png.length - 12),
      pngChunk('drPd', randomBytes(300 * 1024)),
      pngChunk('drPd', randomBytes(100 * 1024)),
      iend,
    ]),
  );
  await exif.write(file, ['-EXIF:Software=Service 2.1']);
}

describe('an output spliced as its body streams in (outputs/splice.ts)', () => {
  const cases = [
    { name: 'a JPEG', kind: 'jpeg' as const, make: (d: string) => serviceFile(d, 'jpeg'), whole: false },
    {
      name: 'a PNG with large chunks after its image data',
      kind: 'png' as const,
      make: async (d: string) => {
        const f = path.join(d, 'raw.png');
        await benchPng(f);
        return f;
      },
      whole: false,
    },
    { name: 'a PNG with text after its image data', kind: 'png' as const, make: (d: string) => serviceFile(d, 'png'), whole: true },
  ];
  for (const c of cases) {
    it(`is, for ${c.name}, byte for byte what ExifTool makes of the whole file${c.whole ? ' (spliced whole once written)' : ', the image data written once'}`, async () => {
      const d = makeTempDir('darkroom-splice-');
      dirs.push(d);
      const input = path.join(d, 'scan.jpg');
      await solid(input, 64, 48, [200, 150, 100], 'jpeg');
      await exif.write(input, [...SCAN_TAGS]);
      const raw = await c.make(d);
      const ext = path.extname(raw);
      const req = { kind: c.kind, level: 'all' as const, source: { file: input }, provenance: PROVENANCE };
      await carryTo(whole, { ...req, raw }, path.join(d, `whole${ext}`));
      const body = readFileSync(raw);
      // The body as a socket hands it over: in odd pieces, so every boundary falls mid-chunk somewhere.
      const rest = (async function* () {
        for (let i = 16; i < body.length; i += 7777) yield body.subarray(i, Math.min(body.length, i + 7777));
      })();
      let finalized = 0;
      let written = 0;
      const out = path.join(d, `out${ext}`);
      const facts = await writeSplicedAtomically(out, { head: body.subarray(0, 16), rest, check: (n) => expect(n).toBe(body.length) }, d, {
        fs: { ...nodeOutputFs, writeAsync: (fd, b) => ((written += b.length), nodeOutputFs.writeAsync(fd, b)) },
        splice: {
          kind: c.kind,
          head: async (si) => {
            const r = await spliced.carry({ ...req, raw: si });
            r.release();
            return r.layout![0] as Buffer;
          },
        },
        finalize: async (temp, dir) => {
          finalized++;
          const r = await spliced.carry({ ...req, raw: temp });
          try {
            return await writeLayout(dir, out, r.layout!);
          } finally {
            r.release();
          }
        },
      });
      const made = readFileSync(out);
      expect(made.equals(readFileSync(path.join(d, `whole${ext}`))), 'byte for byte').toBe(true);
      expect(facts).toMatchObject({ bytes: made.length, sha256: sha256Of(out) });
      expect(finalized).toBe(c.whole ? 1 : 0);
      if (!c.whole) expect(written, 'the image data written once').toBe(made.length);
      expect(readdirSync(d).filter((f) => f.endsWith('.darkroom-tmp'))).toEqual([]);
    });
  }
});

describe('an output whose body breaks off after its head was spliced', () => {
  it('is not written: no file at its name, no temp file, the error the download gets', async () => {
    const d = makeTempDir('darkroom-splice-');
    dirs.push(d);
    const raw = await serviceFile(d, 'jpeg');
    const body = readFileSync(raw);
    const rest = (async function* () {
      yield body.subarray(16, body.length >> 1);
      throw new Error('socket hang up');
    })();
    const out = path.join(d, 'out.jpg');
    let heads = 0;
    const req = { kind: 'jpeg' as const, level: 'basic' as const, source: { none: 'a URL input' }, provenance: PROVENANCE };
    await expect(
      writeSplicedAtomically(out, { head: body.subarray(0, 16), rest }, d, {
        splice: {
          kind: 'jpeg',
          head: async (si) => {
            heads++;
            const r = await spliced.carry({ ...req, raw: si });
            r.release();
            return r.layout![0] as Buffer;
          },
        },
      }),
    ).rejects.toThrow('socket hang up');
    expect(heads).toBe(1);
    expect(readdirSync(d).filter((f) => f.startsWith('out') || f.endsWith('.darkroom-tmp'))).toEqual([]);
  });
});

describe('an output too large to rewrite whole that cannot be spliced', () => {
  it("is the service's bytes, its metadata in <output>.xmp beside it, with a warning naming the photo", async () => {
    const job = await makeJob({ photos: 0, steps: [{ capability: 'restore' }], extra: { output: { dir: './out', metadata: 'all' } } });
    dirs.push(job.dir);
    const input = await mpfJpeg(path.join(job.inputDir, 'multi.jpg'));
    await exif.write(input, ['-XMP-dc:Title=Two pictures in one']);
    const writer = new MetadataWriter({ maxProcs: 1, wholeRewriteMax: 100 });
    await writer.start();
    const warnings: string[] = [];
    try {
      const r = await simulate({
        job,
        sim: { processing: 'passthrough' },
        runOptions: { metadataWriter: writer },
        log: pino({ level: 'warn' }, { write: (l: string) => void warnings.push(String((JSON.parse(l) as { msg: unknown }).msg)) }),
      });
      const item = r.ledger.items.all()[0]!;
      expect(item.state, item.reason ?? '').toBe('done');
      const out = item.output_path!;
      // Passthrough: the service's bytes are the input's; the output is them exactly.
      expect(readFileSync(out).equals(readFileSync(input))).toBe(true);
      const side = await exif.read(`${out}.xmp`);
      expect(side['XMP-iptcExt:DigitalSourceType']).toMatch(/compositeWithTrainedAlgorithmicMedia$/);
      expect(side['XMP-dc:Title']).toBe('Two pictures in one');
      expect(r.ledger.outputFiles.fileMetadata(out)).toMatchObject({
        level: 'none',
        note: expect.stringMatching(/^metadata in the XMP sidecar beside it: a JPEG with an MPF segment/),
      });
      expect(warnings.some((w) => /^metadata in the XMP sidecar beside it: /.test(w))).toBe(true);
      r.ledger.close();
    } finally {
      await writer.end();
    }
  }, 60_000);
});
