import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Ledger } from '../../src/ledger/index.js';
import { MetadataWriter, type CarryRequest, type CarryResult } from '../../src/metadata/writer.js';
import { nodeOutputFs, type OutputFs } from '../../src/outputs/outputfs.js';
import { makeJob } from '../helpers/job.js';
import { Exif, solid } from '../helpers/metadata.js';
import { simulate } from '../helpers/simulate.js';
import { MetadataWriteError } from '../../src/errors.js';

/**
 * The output folder fills during the night: room for the service's bytes, none for
 * ExifTool's copy of them with the input's metadata. ExifTool says only "Error writing
 * output file"; with less room than the copy needs, that is the full disk, and the photo
 * must wait for room (paid, not yet downloaded) rather than be settled without its metadata.
 * The disk is the test's: ExifTool's failure and the free space are what a full one gives.
 */
const exif = new Exif();
const cleanups: (() => void)[] = [];
afterAll(async () => {
  while (cleanups.length) cleanups.pop()!();
  await exif.end();
});

/** ExifTool that meets a full disk while `full` says so. */
class FullDiskWriter extends MetadataWriter {
  full = false;
  override async carry(req: CarryRequest): Promise<CarryResult> {
    if (this.full) throw new MetadataWriteError('ExifTool cannot write the output: Error writing output file', true);
    return super.carry(req);
  }
}

describe('a disk that fills while ExifTool writes', () => {
  it('keeps the photo paid and waiting, then writes it with its metadata once there is room', async () => {
    const job = await makeJob({ photos: 0, steps: [{ capability: 'restore' }], extra: { output: { dir: './out', metadata: 'all' } } });
    cleanups.push(job.cleanup);
    const file = path.join(job.inputDir, 'scan.jpg');
    await solid(file, 64, 48, [120, 80, 60], 'jpeg');
    await exif.write(file, ['-XMP-dc:Title=The beach', '-EXIF:DateTimeOriginal=1962:07:14 10:30:00']);
    const writer = new FullDiskWriter();
    await writer.start();
    cleanups.push(() => void writer.end());
    let free = 10 * 1024 ** 3;
    const fs: OutputFs = { ...nodeOutputFs, freeBytes: () => free };
    const ledger = Ledger.open(job.ledgerFile);
    cleanups.push(() => ledger.close());
    const first = await simulate({
      job,
      ledger,
      sim: { processing: 'sharp' },
      runOptions: { metadataWriter: writer, outputFs: fs },
      // The disk fills after the run's start check: 100 KB left.
      resultIntercept: async (_url, forward) => {
        writer.full = true;
        free = 100 * 1024;
        return forward();
      },
    });
    const item = ledger.items.all()[0]!;
    expect(item.state).toBe('succeeded');
    expect(item.reason).toMatch(/no space left on the device/);
    expect(first.result.halt?.kind).toBe('disk');

    writer.full = false;
    free = 10 * 1024 ** 3;
    const second = await simulate({
      job,
      ledger,
      model: first.model,
      clock: first.clock,
      sim: { processing: 'sharp' },
      runOptions: { metadataWriter: writer, outputFs: fs },
    });
    expect(second.result.status).toMatchObject({ done: 1 });
    const out = ledger.items.all()[0]!.output_path!;
    expect((await exif.read(out))['XMP-dc:Title']).toBe('The beach');
    expect(ledger.outputFiles.fileMetadata(out)).toMatchObject({ level: 'all', note: null });
    // One create: the photo was paid once.
    expect(second.model.audit().tasks).toBe(1);
  }, 120_000);

  it('still writes the output, marked, when ExifTool fails to write with room to spare', async () => {
    const job = await makeJob({ photos: 0, steps: [{ capability: 'restore' }], extra: { output: { dir: './out', metadata: 'all' } } });
    cleanups.push(job.cleanup);
    await solid(path.join(job.inputDir, 'scan.jpg'), 64, 48, [120, 80, 60], 'jpeg');
    const writer = new FullDiskWriter();
    await writer.start();
    cleanups.push(() => void writer.end());
    writer.full = true;
    const r = await simulate({ job, sim: { processing: 'sharp' }, runOptions: { metadataWriter: writer } });
    cleanups.push(() => r.ledger.close());
    const item = r.ledger.items.all()[0]!;
    expect(item.state).toBe('done');
    expect(r.ledger.outputFiles.fileMetadata(item.output_path!)).toMatchObject({
      level: 'none',
      note: expect.stringMatching(/Error writing output file/),
    });
  }, 120_000);
});
