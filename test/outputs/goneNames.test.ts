import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { requeueRejected, readRejected } from '../../src/lib/retryRejected.js';
import { nodeOutputFs, type OutputFs } from '../../src/outputs/outputfs.js';
import { filesUnder, makeJob, writePhoto } from '../helpers/job.js';
import { sha256Of } from '../helpers/metadata.js';
import { simSession, simulate } from '../helpers/simulate.js';

/**
 * The files of a name the inputs no longer have (outputs/goneNames.ts), in virtual time:
 * the moments a user does not see in the CLI test (test/e2e/cli.renamed.test.ts).
 */
const cleanups: (() => void)[] = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

async function twoPhotos(extra: Record<string, unknown> = {}) {
  const job = await makeJob({
    photos: 0,
    steps: [{ capability: 'enhance' }],
    extra: { output: { dir: './out', metadata: 'none', sidecar: 'json', ...extra } },
  });
  cleanups.push(job.cleanup);
  await writePhoto(path.join(job.inputDir, 'a.jpg'), 1);
  await writePhoto(path.join(job.inputDir, 'b.jpg'), 2);
  const s = simSession({ job, ledger: job.ledgerFile });
  cleanups.push(() => s.ledger.close());
  expect((await simulate(s)).result.exitCode).toBe(0);
  return { job, s, inp: (p: string) => path.join(job.inputDir, p), out: (p: string) => path.join(job.outputDir, p) };
}

describe('the outputs of a gone name', () => {
  it('a rejected output kept aside stays when its input is renamed before the redo; the old name leaves nothing else', async () => {
    const { job, s, inp } = await twoPhotos();
    const id = s.ledger.reviews.idOf('a.jpg')!;
    s.ledger.reviews.record(id, 'reject', s.ledger.reviews.photo(id)!.sha256, 'too dark');
    const { kept } = await requeueRejected(job.ledgerFile, readRejected(job.ledgerFile), {});
    expect(kept).toHaveLength(1);
    const keptSha = sha256Of(kept[0]!);
    renameSync(inp('a.jpg'), inp('a2.jpg'));
    expect((await simulate(s)).result.exitCode).toBe(0);
    expect(filesUnder(job.outputDir)).toEqual([path.basename(kept[0]!), 'a2.jpg', 'a2.jpg.json', 'b.jpg', 'b.jpg.json']);
    expect(sha256Of(kept[0]!)).toBe(keptSha);
  });

  it('a run stopped between removing the old file and recording it: the next run records it, and the decision still follows', async () => {
    const { job, s, inp, out } = await twoPhotos();
    const id = s.ledger.reviews.idOf('a.jpg')!;
    s.ledger.reviews.record(id, 'accept', s.ledger.reviews.photo(id)!.sha256);
    renameSync(inp('a.jpg'), inp('a2.jpg'));
    // The file gone, the ledger not told (as a kill there leaves it): the folder's fsync fails.
    const stopped: OutputFs = {
      ...nodeOutputFs,
      syncDir: (dir) => {
        if (!existsSync(out('a.jpg'))) throw Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO' });
        nodeOutputFs.syncDir(dir);
      },
    };
    expect((await simulate({ ...s, runOptions: { outputFs: stopped } })).result.exitCode).toBe(0);
    expect(existsSync(out('a.jpg'))).toBe(false);
    expect(s.ledger.outputFiles.fileAt(out('a.jpg'))).toBeDefined();
    expect((await simulate(s)).result.exitCode).toBe(0);
    expect(s.ledger.outputFiles.fileAt(out('a.jpg'))).toBeUndefined();
    expect(filesUnder(job.outputDir)).toEqual(['a2.jpg', 'a2.jpg.json', 'b.jpg', 'b.jpg.json']);
    expect(s.ledger.reviews.counts()).toEqual({ accepted: 1, rejected: 0, unreviewed: 1 });
    expect(s.ledger.reviews.photo(id)!.outputPath).toBe(out('a2.jpg'));
  });

  it('a file of the old name that no one can vouch for stays: a sidecar a person edited since', async () => {
    const { job, s, inp, out } = await twoPhotos();
    writeFileSync(out('a.jpg.json'), '{"edited": true}\n');
    renameSync(inp('a.jpg'), inp('a2.jpg'));
    expect((await simulate(s)).result.exitCode).toBe(0);
    expect(readFileSync(out('a.jpg.json'), 'utf8')).toBe('{"edited": true}\n');
    expect(existsSync(out('a.jpg'))).toBe(false);
    expect(s.ledger.outputFiles.fileAt(out('a.jpg.json')), 'no longer darkroom’s').toBeUndefined();
    expect(filesUnder(job.outputDir)).toEqual(['a.jpg.json', 'a2.jpg', 'a2.jpg.json', 'b.jpg', 'b.jpg.json']);
  });
});
