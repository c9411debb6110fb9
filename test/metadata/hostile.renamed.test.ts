import { existsSync, renameSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Ledger } from '../../src/ledger/index.js';
import { makeJob } from '../helpers/job.js';
import { Exif, solid } from '../helpers/metadata.js';
import { simulate } from '../helpers/simulate.js';

/**
 * Hostile archive: a photo manager renames a master while darkroom runs (digiKam's and
 * Lightroom's "rename by date"). Its output is written without its metadata (the file is
 * gone under the old name: documented, fine). On the next run darkroom finds the new name,
 * sees the photo is done and copies the output to the new name: the input's metadata is
 * readable again under that name, and its XMP sidecar does carry it, but the output itself
 * never gets it, and says "the input s.jpg cannot be read" of a name that is not its own.
 */
const exif = new Exif();
const cleanups: (() => void)[] = [];
afterAll(async () => {
  while (cleanups.length) cleanups.pop()!();
  await exif.end();
});

describe('an input renamed between upload and download', () => {
  it("its new name's output carries the metadata its new name's sidecar carries", async () => {
    const job = await makeJob({
      photos: 0,
      steps: [{ capability: 'restore' }],
      extra: { output: { dir: './out', metadata: 'all', sidecar: 'xmp' } },
    });
    cleanups.push(job.cleanup);
    const old = path.join(job.inputDir, 'IMG_0001.jpg');
    const renamed = path.join(job.inputDir, '1962-07-14 beach.jpg');
    await solid(old, 64, 48, [120, 80, 60], 'jpeg');
    await exif.write(old, ['-XMP-dc:Title=The beach', '-EXIF:DateTimeOriginal=1962:07:14 10:30:00']);
    const ledger = Ledger.open(job.ledgerFile);
    cleanups.push(() => ledger.close());
    const first = await simulate({
      job,
      ledger,
      sim: { processing: 'sharp' },
      resultIntercept: async (url, forward) => {
        if (existsSync(old)) renameSync(old, renamed);
        return forward();
      },
    });
    await simulate({ job, ledger, model: first.model, clock: first.clock, sim: { processing: 'sharp' } });
    const out = path.join(job.outputDir, '1962-07-14 beach.jpg');
    expect(existsSync(out)).toBe(true);
    expect((await exif.read(`${out}.xmp`))['XMP-dc:Title']).toBe('The beach');
    const meta = ledger.outputFiles.fileMetadata(out);
    expect(meta?.note ?? '', "the note speaks of a name that is not this output's").not.toContain('IMG_0001.jpg');
    expect((await exif.read(out))['XMP-dc:Title']).toBe('The beach');
  }, 120_000);
});
