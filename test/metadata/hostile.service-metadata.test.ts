import { createHash } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, describe, expect, it } from 'vitest';
import { DARKROOM_AGENT } from '../../src/metadata/agent.js';
import { makeJob } from '../helpers/job.js';
import { Exif, pixelPrint, solid } from '../helpers/metadata.js';
import { simulate } from '../helpers/simulate.js';

/**
 * Hostile service: one that hands back the file it was given with its metadata (the
 * simulator's `passthrough` processing; real services built on PIL or libvips that keep
 * EXIF/XMP/APP13 do the same). docs/metadata.md promises that a thumbnail "the service's
 * bytes brought along is removed", that the output shows the service's pixels, and one
 * History event per step after the original's own.
 */
const exif = new Exif();
const cleanups: (() => void)[] = [];
afterAll(async () => {
  while (cleanups.length) cleanups.pop()!();
  await exif.end();
});

/** The pixels as a viewer shows them: EXIF orientation applied. */
async function shownPrint(file: Buffer): Promise<string> {
  const { data, info } = await sharp(file).rotate().raw().toBuffer({ resolveWithObject: true });
  return `${info.width}x${info.height}:${createHash('sha256').update(data).digest('hex')}`;
}

async function runPassthrough(extra: Record<string, unknown>, make: (p: (f: string) => string) => Promise<void>) {
  const job = await makeJob({ photos: 0, steps: [{ capability: 'restore' }], extra });
  cleanups.push(job.cleanup);
  await make((f) => path.join(job.inputDir, f));
  const results = new Map<string, Buffer>();
  const sim = await simulate({
    job,
    sim: { processing: 'passthrough' },
    resultIntercept: async (url, forward) => {
      const r = await forward();
      if (Buffer.isBuffer(r.body)) results.set(url.href, r.body);
      return r;
    },
  });
  cleanups.push(() => sim.ledger.close());
  const item = sim.ledger.items.all()[0]!;
  expect(item.state).toBe('done');
  const attempt = sim.ledger.outputFiles
    .attemptsOf(item.id)
    .filter((a) => a.status === 'SUCCESS')
    .at(-1)!;
  return { out: item.output_path!, service: results.get(attempt.result_url!)! };
}

describe('a service that returns its input with the metadata', () => {
  it("input.transcode: off, Orientation 8: the output is shown as the service's bytes are, not turned 90°", async () => {
    const { out, service } = await runPassthrough(
      { input: { dir: './photos', transcode: 'off' }, output: { dir: './out', metadata: 'all' } },
      async (p) => {
        await solid(p('rot8.jpg'), 60, 40, [90, 90, 200], 'jpeg');
        // A gradient-free solid would look the same turned: mark one corner.
        const marked = await sharp(p('rot8.jpg'))
          .composite([{ input: { create: { width: 10, height: 10, channels: 3, background: { r: 255, g: 0, b: 0 } } }, left: 0, top: 0 }])
          .jpeg()
          .toBuffer();
        await sharp(marked).toFile(p('rot8.jpg'));
        await exif.write(p('rot8.jpg'), ['-IFD0:Orientation#=8', '-EXIF:DateTimeOriginal=1975:01:02 03:04:05']);
      },
    );
    const bytes = readFileSync(out);
    // Stored pixels are the service's (darkroom never re-encodes)...
    expect(await pixelPrint(bytes)).toBe(await pixelPrint(service));
    // ...and the service said "turn 270° to show": the output must say the same.
    expect((await sharp(service).metadata()).orientation).toBe(8);
    expect((await sharp(bytes).metadata()).orientation).toBe(8);
    expect(await shownPrint(bytes)).toBe(await shownPrint(service));
  });

  const scanWithThumbs = async (p: (f: string) => string) => {
    await solid(p('thumb.tmp.jpg'), 16, 12, [10, 200, 10], 'jpeg');
    await solid(p('scan.jpg'), 64, 48, [180, 120, 90], 'jpeg');
    await exif.write(p('scan.jpg'), [
      '-EXIF:DateTimeOriginal=1962:07:14 10:30:00',
      '-IPTC:Caption-Abstract=Grandma at the beach',
      '-XMP-xmpMM:History={action=created,when=1999:03:01 12:00:00,softwareAgent=VueScan 9}',
      `-ThumbnailImage<=${p('thumb.tmp.jpg')}`,
      `-Photoshop:PhotoshopThumbnail<=${p('thumb.tmp.jpg')}`,
    ]);
    rmSync(p('thumb.tmp.jpg'));
  };

  it("removes the stale thumbnails the service's bytes brought along (EXIF IFD1 and Photoshop APP13)", async () => {
    const { out } = await runPassthrough({ output: { dir: './out', metadata: 'all' } }, scanWithThumbs);
    const t = await exif.read(out);
    expect(t['IFD1:ThumbnailImage']).toBeUndefined();
    expect(t['Photoshop:PhotoshopThumbnail']).toBeUndefined();
    expect(t['IPTC:Caption-Abstract']).toBe('Grandma at the beach');
  });

  it("lists the original's own History event once, then one per step", async () => {
    const { out } = await runPassthrough({ output: { dir: './out', metadata: 'all' } }, scanWithThumbs);
    const history = (await exif.read(out))['XMP-xmpMM:History'] as Record<string, string>[];
    expect(history.map((h) => `${h.Action} ${h.SoftwareAgent}`)).toEqual(['created VueScan 9', `edited ${DARKROOM_AGENT}`]);
  });
});
