import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { manifestOfJob } from '../../src/lib/manifest.js';
import { makeJob, writePhoto } from '../helpers/job.js';
import { simulate } from '../helpers/simulate.js';

/**
 * Hostile archivist: the output folder is renamed after the run ("out" → "archive-2024",
 * jobs.yaml's output.dir updated to match), or the whole job folder is copied to the
 * archive disk. The ledger keeps absolute paths, every one of them now outside output.dir,
 * and `darkroom manifest` skips them without a word: it writes EMPTY manifests, says
 * "manifest 0 files (0 outputs)" and exits 0, and its `check` line invites the archivist to
 * verify a copy against nothing. docs/metadata.md: a file darkroom wrote that is missing "is
 * named and left out" and "makes the command exit 1".
 */
const cleanups: (() => void)[] = [];
afterAll(() => {
  while (cleanups.length) cleanups.pop()!();
});

describe('darkroom manifest after the output folder was renamed', () => {
  it('does not write an empty manifest and call it done: every file darkroom wrote is listed or named missing', async () => {
    const job = await makeJob({
      photos: 3,
      steps: [{ capability: 'enhance' }],
      extra: { output: { dir: './out', metadata: 'none', sidecar: 'json' } },
    });
    cleanups.push(job.cleanup);
    const sim = await simulate({ job, ledger: job.ledgerFile });
    sim.ledger.close();
    expect(sim.result.status).toMatchObject({ total: 3, done: 3 });

    const before = await manifestOfJob({ job: job.jobsFile });
    expect(before.files).toBe(6);

    renameSync(job.outputDir, path.join(job.dir, 'archive-2024'));
    const doc = parse(readFileSync(job.jobsFile, 'utf8')) as { output: Record<string, unknown> };
    writeFileSync(job.jobsFile, stringify({ ...doc, output: { ...doc.output, dir: './archive-2024' } }));

    const after = await manifestOfJob({ job: job.jobsFile });
    // Either it finds the files where they now are, or it names each as missing (exit 1).
    expect(after.files + after.missing.length, `files ${after.files}, missing ${after.missing.length}: an empty manifest, exit 0`).toBe(6);
  });

  it('does not call "missing" the sidecars and intermediates it never wrote (names too long for the file system)', async () => {
    // An output name of 251 bytes: the output fits (255), `.json` and `.restore.jpg` do not;
    // darkroom logs "not written" and goes on, as it should, but has recorded them already.
    const job = await makeJob({
      photos: 0,
      steps: [{ capability: 'restore' }, { capability: 'upscale', resolution: '4K' }],
      extra: { output: { dir: './out', metadata: 'none', sidecar: 'json', keepIntermediates: true } },
    });
    cleanups.push(job.cleanup);
    await writePhoto(path.join(job.inputDir, `${'L'.repeat(247)}.jpg`), 1);
    await writePhoto(path.join(job.inputDir, 'short.jpg'), 2);
    const sim = await simulate({ job, ledger: job.ledgerFile });
    sim.ledger.close();
    expect(sim.result.status).toMatchObject({ total: 2, done: 2 });
    const m = await manifestOfJob({ job: job.jobsFile });
    // short.jpg, short.jpg.json, short.restore.jpg and the long output.
    expect(m.files).toBe(4);
    expect(
      m.missing.map((f) => `${f.length} bytes: …${f.slice(-16)}`),
      'a clean run, and manifest exits 1 naming files that were never written',
    ).toEqual([]);
  });
});
