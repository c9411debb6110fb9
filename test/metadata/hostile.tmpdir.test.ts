import { existsSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { Ledger } from '../../src/ledger/index.js';
import { makeJob } from '../helpers/job.js';
import { Exif, solid } from '../helpers/metadata.js';
import { simulate } from '../helpers/simulate.js';

/**
 * Hostile environment: TMPDIR names a folder that is gone (a cron job or systemd unit with
 * a private TMPDIR cleaned away, a container's /tmp not mounted, a read-only /tmp). darkroom
 * before the metadata step never needed the temp folder; the metadata writer makes its
 * scratch folder there (mkdtemp) outside any fallback, so every paid result's download
 * fails and is retried for ever: the photos are paid for and never delivered. Either the
 * run says so before anything is spent (as it does without perl), or it writes the outputs.
 */
const exif = new Exif();
const cleanups: (() => void)[] = [];
const savedTmp = process.env.TMPDIR;
afterEach(() => {
  if (savedTmp === undefined) delete process.env.TMPDIR;
  else process.env.TMPDIR = savedTmp;
});
afterAll(async () => {
  while (cleanups.length) cleanups.pop()!();
  await exif.end();
});

describe('TMPDIR that does not exist', () => {
  it('never leaves a paid result undelivered: the photo is done with its output, or nothing was created', async () => {
    const job = await makeJob({ photos: 0, steps: [{ capability: 'restore' }], extra: { output: { dir: './out', metadata: 'all' } } });
    cleanups.push(job.cleanup);
    const file = path.join(job.inputDir, 'scan.jpg');
    await solid(file, 64, 48, [120, 80, 60], 'jpeg');
    await exif.write(file, ['-XMP-dc:Title=The beach']);
    const ledger = Ledger.open(job.ledgerFile);
    cleanups.push(() => ledger.close());

    process.env.TMPDIR = path.join(job.dir, 'no-such-tmp');
    let stuck: unknown = null;
    const sim = await simulate({ job, ledger, sim: { processing: 'sharp' }, maxMs: 3 * 3_600_000 }).catch((err: unknown) => {
      stuck = err;
      return null;
    });
    // A run halted before anything is spent stops its discovery too: then no photo is even recorded.
    const item = ledger.items.all()[0];
    const creates = sim?.audit.tasks ?? (item ? ledger.outputFiles.attemptsOf(item.id).length : 0);
    console.log(
      'state',
      item?.state,
      'reason',
      item?.reason,
      'creates',
      creates,
      'stuck',
      stuck === null ? null : String(stuck).slice(0, 200),
    );
    if (creates > 0) {
      // Paid for: it must have been delivered.
      expect(stuck, 'the run never ended: the result is retried for ever').toBeNull();
      expect(item?.state).toBe('done');
      expect(existsSync(path.join(job.outputDir, 'scan.jpg'))).toBe(true);
    }
  }, 120_000);
});
