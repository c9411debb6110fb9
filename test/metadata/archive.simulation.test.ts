import { readFileSync, existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIGITAL_SOURCE_TYPE } from '../../src/metadata/tags.js';
import { makeJob, type TestJob } from '../helpers/job.js';
import { greyProfile, PROPHOTO, rgbProfile } from '../helpers/icc.js';
import { Exif, inProfile, pixelPrint, SCAN_TAGS, sha256Of, solid, storedPixel, writeProfile } from '../helpers/metadata.js';
import { simulate } from '../helpers/simulate.js';

/**
 * An archive's photos through the simulator with two steps, every output read back with
 * ExifTool: what the archive knew of each photo is on its output, nothing stale is, the
 * output says what was done to it, and its pixels are the service's.
 */

const exif = new Exif();
// Each describe builds its archive once and reads it in several tests: cleaned up at the end.
const cleanups: (() => void)[] = [];
afterAll(async () => {
  while (cleanups.length) cleanups.pop()!();
  await exif.end();
});

/** Two steps, so each output has two History events; both results are JPEG. */
const STEPS = [{ capability: 'restore' }, { capability: 'upscale', resolution: '4K' }];

interface Archive {
  readonly job: TestJob;
  /** SHA-256 of every input before the run. */
  readonly before: Map<string, string>;
  /** The stored numbers of the ProPhoto master's first pixel, and the same colour in sRGB. */
  readonly prophoto: { stored: number[]; srgb: number[] };
}

async function buildArchive(extra: Record<string, unknown> = {}): Promise<Archive> {
  // output.metadata left to its default (all) unless `extra` says otherwise.
  const job = await makeJob({
    photos: 0,
    steps: STEPS,
    extra: { service: { apiKeyEnv: 'DARKROOM_TEST_KEY', name: 'Example Restore API' }, output: { dir: './out' }, ...extra },
  });
  cleanups.push(job.cleanup);
  const p = (f: string) => path.join(job.inputDir, f);
  // A scanned print, as scanning software and a photo manager leave it: EXIF, IPTC, XMP and a thumbnail.
  await solid(p('thumb-source.tmp.jpg'), 16, 12, [10, 200, 10], 'jpeg');
  await solid(p('scan.jpg'), 64, 48, [180, 120, 90], 'jpeg');
  await exif.write(p('scan.jpg'), [
    ...SCAN_TAGS,
    '-XMP-xmpMM:DocumentID=xmp.did:scan-0001',
    '-XMP-xmpMM:History={action=created,when=1999:03:01 12:00:00,softwareAgent=VueScan 9}',
    `-ThumbnailImage<=${p('thumb-source.tmp.jpg')}`,
  ]);
  // Stored sideways, with an EXIF orientation saying so.
  await solid(p('sideways.jpg'), 60, 40, [90, 90, 200], 'jpeg');
  await exif.write(p('sideways.jpg'), ['-IFD0:Orientation#=6', '-EXIF:DateTimeOriginal=1975:01:02 03:04:05']);
  // A TIFF master.
  await solid(p('master.tif'), 64, 48, [120, 140, 160], 'tiff');
  await exif.write(p('master.tif'), [
    '-IFD0:Artist=Scanner Person',
    '-IFD0:ImageDescription=A TIFF master',
    '-EXIF:DateTimeOriginal=1980:05:06 07:08:09',
    '-XMP-dc:Title=Tiff title',
  ]);
  // A ProPhoto RGB scan: its numbers mean other colours in sRGB.
  const prophotoIcc = writeProfile(job.dir, 'prophoto', rgbProfile(PROPHOTO));
  await inProfile(p('prophoto.png'), prophotoIcc, [200, 60, 40]);
  await exif.write(p('prophoto.png'), ['-XMP-dc:Title=Wide gamut scan', '-EXIF:DateTimeOriginal=1990:01:01 00:00:00']);
  // A grey scan with its own grey profile.
  const greyIcc = writeProfile(job.dir, 'grey', greyProfile('Gray Gamma 2.2', 2.2));
  await sharp({ create: { width: 24, height: 24, channels: 3, background: { r: 110, g: 110, b: 110 } } })
    .greyscale()
    .withIccProfile(greyIcc)
    .png()
    .toFile(p('grey.png'));
  // No metadata at all.
  await solid(p('plain.png'), 40, 30, [30, 60, 90], 'png');
  // The thumbnail's source is not an input.
  const { rmSync } = await import('node:fs');
  rmSync(p('thumb-source.tmp.jpg'));
  const before = new Map(readdirSync(job.inputDir).map((f) => [f, sha256Of(p(f))]));
  const stored = await storedPixel(p('prophoto.png'));
  const srgb = [...(await sharp(p('prophoto.png')).raw().toBuffer()).subarray(0, 3)];
  return { job, before, prophoto: { stored, srgb } };
}

interface RunFacts {
  /** The last step's result bytes, by result URL. */
  readonly results: Map<string, Buffer>;
  /** The image each upload sent, by its file name. */
  readonly uploads: Map<string, Buffer>;
  readonly sim: Awaited<ReturnType<typeof simulate>>;
}

async function runArchive(a: Archive): Promise<RunFacts> {
  const results = new Map<string, Buffer>();
  const uploads = new Map<string, Buffer>();
  const sim = await simulate({
    job: a.job,
    sim: { processing: 'sharp' },
    intercept: async (req, forward) => {
      if (req.url.endsWith('/api/v1/image/upload') && Buffer.isBuffer(req.body)) {
        const form = await new Request('http://sim.invalid/', {
          method: 'POST',
          headers: { 'content-type': req.headers['content-type']! },
          body: req.body,
        }).formData();
        const image = form.get('image');
        if (image && typeof image !== 'string') uploads.set(image.name, Buffer.from(await image.arrayBuffer()));
      }
      return forward();
    },
    resultIntercept: async (url, forward) => {
      const r = await forward();
      if (Buffer.isBuffer(r.body)) results.set(url.href, r.body);
      return r;
    },
  });
  cleanups.push(() => sim.ledger.close());
  return { results, uploads, sim };
}

/** The output of an input, its item, and the result URL of its last step. */
function outputOf(run: RunFacts, rel: string): { file: string; resultUrl: string; taskIds: string[] } {
  const item = run.sim.ledger.items.all().find((i) => i.rel_path === rel)!;
  const attempts = run.sim.ledger.outputFiles.attemptsOf(item.id).filter((x) => x.status === 'SUCCESS');
  return { file: item.output_path!, resultUrl: attempts.at(-1)!.result_url!, taskIds: attempts.map((x) => x.task_id) };
}

describe('archive outputs (output.metadata: all)', () => {
  let a: Archive;
  let run: RunFacts;
  beforeAll(async () => {
    a = await buildArchive();
    run = await runArchive(a);
  }, 120_000);

  it('finishes every photo and never touches a master', () => {
    expect(run.sim.result.status).toMatchObject({ total: 6, done: 6 });
    for (const [f, sha] of a.before) expect(sha256Of(path.join(a.job.inputDir, f)), f).toBe(sha);
  });

  it("carries the scan's EXIF, GPS, IPTC and XMP to its output, in their own places", async () => {
    const t = await exif.read(outputOf(run, 'scan.jpg').file);
    const n = await exif.read(outputOf(run, 'scan.jpg').file, true);
    expect(t['ExifIFD:DateTimeOriginal']).toBe('1962:07:14 10:30:00');
    expect(t['IFD0:Make']).toBe('Epson');
    expect(t['IFD0:Model']).toBe('Perfection V850');
    expect(n['GPS:GPSLatitude']).toBeCloseTo(48.8566, 4);
    expect(n['GPS:GPSLongitude']).toBeCloseTo(2.3522, 4);
    expect(t['IPTC:Caption-Abstract']).toBe('Grandma at the beach, 1962');
    expect(t['IPTC:Keywords']).toEqual(['beach', 'family']);
    expect(t['IPTC:By-line']).toBe('J. Doe');
    expect(t['IPTC:CopyrightNotice']).toBe('© Doe family');
    expect(t['XMP-dc:Title']).toBe('The beach');
    expect(t['XMP-dc:Subject']).toEqual(['beach', 'family']);
    expect(t['XMP-dc:Creator']).toEqual(['J. Doe']);
    expect(t['XMP-dc:Rights']).toBe('© Doe family');
    expect(String(t['XMP-photoshop:DateCreated'])).toBe('1962');
  });

  it("keeps the TIFF master's own tags, not its structure", async () => {
    const t = await exif.read(outputOf(run, 'master.tif').file);
    expect(t['IFD0:Artist']).toBe('Scanner Person');
    expect(t['IFD0:ImageDescription']).toBe('A TIFF master');
    expect(t['ExifIFD:DateTimeOriginal']).toBe('1980:05:06 07:08:09');
    expect(t['XMP-dc:Title']).toBe('Tiff title');
    expect(t['IFD0:Compression']).toBeUndefined();
    expect(t['IFD0:StripOffsets']).toBeUndefined();
    expect(t['IFD0:XResolution']).toBeUndefined();
  });

  it('fixes what a blind copy gets wrong: Orientation 1, no stale thumbnail, the true size, no pasted profile', async () => {
    for (const rel of ['scan.jpg', 'sideways.jpg', 'master.tif', 'prophoto.png', 'grey.png', 'plain.png']) {
      const { file } = outputOf(run, rel);
      const t = await exif.read(file, true);
      const m = await sharp(file).metadata();
      expect(t['IFD0:Orientation'], rel).toBe(1);
      expect(t['IFD1:ThumbnailImage'], rel).toBeUndefined();
      expect(
        Object.keys(t).filter((k) => k.startsWith('IFD1:')),
        rel,
      ).toEqual([]);
      expect(t['ExifIFD:ExifImageWidth'], rel).toBe(m.width);
      expect(t['ExifIFD:ExifImageHeight'], rel).toBe(m.height);
      expect(t['ExifIFD:ColorSpace'], rel).toBe(1);
      expect(m.icc, rel).toBeUndefined();
    }
    // The sideways photo was turned upright before upload: its output is taller than wide.
    const m = await sharp(outputOf(run, 'sideways.jpg').file).metadata();
    expect(m.height! > m.width!).toBe(true);
    expect((await exif.read(outputOf(run, 'sideways.jpg').file))['ExifIFD:DateTimeOriginal']).toBe('1975:01:02 03:04:05');
  });

  it('says on every output that a trained model altered it, which service, from which original, in which steps', async () => {
    for (const rel of ['scan.jpg', 'sideways.jpg', 'master.tif', 'prophoto.png', 'grey.png', 'plain.png']) {
      const { file, taskIds } = outputOf(run, rel);
      const t = await exif.read(file);
      expect(t['XMP-iptcExt:DigitalSourceType'], rel).toBe(DIGITAL_SOURCE_TYPE);
      expect(t['XMP-iptcExt:AISystemUsed'], rel).toBe('Example Restore API');
      const derived = t['XMP-xmpMM:DerivedFrom'] as Record<string, string>;
      expect(derived.FilePath, rel).toBe(rel);
      expect(derived.InstanceID, rel).toBe(`urn:sha256:${a.before.get(rel)}`);
      expect(String(t['XMP-xmpMM:DocumentID']), rel).toMatch(/^xmp\.did:[0-9a-f]{32}$/);
      expect(String(t['XMP-xmpMM:InstanceID']), rel).toMatch(/^xmp\.iid:[0-9a-f]{32}$/);
      const history = (t['XMP-xmpMM:History'] as Record<string, string>[]).filter((h) => String(h.SoftwareAgent).startsWith('darkroom '));
      expect(
        history.map((h) => h.Action),
        rel,
      ).toEqual(['edited', 'resized']);
      expect(history[0]!.Parameters).toBe(`capability=restore; task=${taskIds[0]}`);
      expect(history[1]!.Parameters).toBe(`capability=upscale; resolution=4K; task=${taskIds[1]}`);
      expect(taskIds).toHaveLength(2);
    }
    // The original's own history and identity are kept: ours follows it.
    const scan = await exif.read(outputOf(run, 'scan.jpg').file);
    expect((scan['XMP-xmpMM:History'] as Record<string, string>[])[0]).toMatchObject({ Action: 'created', SoftwareAgent: 'VueScan 9' });
    expect((scan['XMP-xmpMM:DerivedFrom'] as Record<string, string>).DocumentID).toBe('xmp.did:scan-0001');
    expect(scan['XMP-xmpMM:OriginalDocumentID']).toBe('xmp.did:scan-0001');
    expect(scan['XMP-xmpMM:DocumentID']).not.toBe('xmp.did:scan-0001');
  });

  it('never re-encodes: each output decodes to exactly the pixels the service sent', async () => {
    for (const rel of ['scan.jpg', 'sideways.jpg', 'master.tif', 'prophoto.png', 'grey.png', 'plain.png']) {
      const { file, resultUrl } = outputOf(run, rel);
      const sent = run.results.get(resultUrl);
      expect(sent, rel).toBeDefined();
      expect(await pixelPrint(file), rel).toBe(await pixelPrint(sent!));
      expect(readFileSync(file).equals(sent!), rel).toBe(false); // the metadata is there
    }
  });

  it('sends the ProPhoto and grey scans converted to sRGB, the others as they are', async () => {
    const prophoto = run.uploads.get('prophoto.png')!;
    const pm = await sharp(prophoto).metadata();
    expect(pm.icc).toBeUndefined();
    const sent = await storedPixel(prophoto);
    // The numbers sent are the sRGB ones, not the ProPhoto numbers of the master.
    sent.forEach((v, i) => expect(Math.abs(v - a.prophoto.srgb[i]!)).toBeLessThanOrEqual(2));
    expect(Math.abs(sent[0]! - a.prophoto.stored[0]!)).toBeGreaterThan(30);
    expect((await sharp(run.uploads.get('grey.png')!).metadata()).icc).toBeUndefined();
    // An sRGB JPEG with nothing to fix goes byte for byte as it is.
    expect(run.uploads.get('scan.jpg')!.equals(readFileSync(path.join(a.job.inputDir, 'scan.jpg')))).toBe(true);
  });

  it('records what each output carries, with its checksums, in the ledger', () => {
    const files = run.sim.ledger.outputFiles.writtenFiles().filter((f) => f.kind === 'output');
    expect(files).toHaveLength(6);
    for (const f of files) {
      expect(f.meta).toBe('all');
      expect(f.metaNote).toBeNull();
      expect(f.sha256).toBe(sha256Of(f.path));
    }
    const scan = files.find((f) => f.path.endsWith('scan.jpg'))!;
    expect(scan.metaTaken).toBe('1962-07-14 10:30:00');
    expect(scan.metaCaption).toBe('Grandma at the beach, 1962');
  });
});

describe('archive outputs (output.metadata: none, sidecar: xmp)', () => {
  it("gives the service's bytes exactly, with the metadata and provenance in <output>.xmp beside", async () => {
    const a = await buildArchive({ output: { dir: './out', metadata: 'none', sidecar: 'xmp' } });
    const run = await runArchive(a);
    expect(run.sim.result.status).toMatchObject({ total: 6, done: 6 });
    for (const rel of ['scan.jpg', 'sideways.jpg', 'master.tif', 'plain.png']) {
      const { file, resultUrl } = outputOf(run, rel);
      expect(readFileSync(file).equals(run.results.get(resultUrl)!), rel).toBe(true);
      expect(existsSync(`${file}.xmp`), rel).toBe(true);
      const x = await exif.read(`${file}.xmp`);
      expect(x['XMP-iptcExt:DigitalSourceType'], rel).toBe(DIGITAL_SOURCE_TYPE);
      expect((x['XMP-xmpMM:DerivedFrom'] as Record<string, string>).FilePath, rel).toBe(rel);
    }
    // The scan's IPTC and EXIF, translated to XMP, as digiKam reads a sidecar.
    const x = await exif.read(`${outputOf(run, 'scan.jpg').file}.xmp`);
    expect(x['XMP-dc:Description']).toBe('Grandma at the beach, 1962');
    expect(x['XMP-dc:Title']).toBe('The beach');
    expect(x['XMP-exif:DateTimeOriginal']).toBe('1962:07:14 10:30:00');
    expect(x['XMP-tiff:Orientation']).toBeUndefined();
    const files = run.sim.ledger.outputFiles.writtenFiles();
    expect(files.filter((f) => f.kind === 'sidecar' && f.path.endsWith('.xmp'))).toHaveLength(6);
    expect(files.filter((f) => f.kind === 'output').every((f) => f.meta === 'none')).toBe(true);
  }, 120_000);
});
