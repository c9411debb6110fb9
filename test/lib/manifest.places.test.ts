import { mkdirSync, readFileSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manifestOfJob } from '../../src/lib/manifest.js';
import { Ledger } from '../../src/ledger/index.js';
import { makeJob, writePhoto, type TestJob } from '../helpers/job.js';
import { manifestBefore } from './manifest.reference.js';
import { simulate } from '../helpers/simulate.js';

/**
 * Where the manifest finds each file and what it names it, for an output folder written as
 * the job's author may write it — `./link/../link/` through a symbolic link to the real
 * folder — and names a quick prefix test could get wrong: `a..b`, a folder ending in `..x`,
 * a leading `..`, spaces, Unicode, a line break. The three files are byte for byte what the
 * reference (path.relative for every file) writes over the same ledger; and after the folder
 * is renamed and the job names its new place, every file is found there under the same names.
 */
const FILES = ['manifest-sha256.txt', 'manifest-sha512.txt', 'provenance.csv'] as const;
const NAMES = ['a..b.jpg', 'dir..x/y.jpg', 'sub/..dots.jpg', 'with space.jpg', 'ünï códe ☃.jpg', 'line\nbreak.jpg'];

let job: TestJob;
let before: [string, string, string];

function setOutputDir(dir: string): void {
  const doc = parse(readFileSync(job.jobsFile, 'utf8')) as { output: Record<string, unknown> };
  writeFileSync(job.jobsFile, stringify({ ...doc, output: { ...doc.output, dir } }));
}

beforeAll(async () => {
  job = await makeJob({ photos: 2, extra: { input: { dir: './photos', hidden: true } } });
  for (const [i, name] of NAMES.entries()) await writePhoto(path.join(job.inputDir, name), 30 + i);
  mkdirSync(path.join(job.dir, 'real'));
  symlinkSync(path.join(job.dir, 'real'), path.join(job.dir, 'link'));
  setOutputDir('./link/../link/');
  const sim = await simulate({ job, ledger: job.ledgerFile });
  expect(sim.result.status.done).toBe(NAMES.length + 2);
  sim.ledger.close();
  const reader = Ledger.open(job.ledgerFile, { readonly: true });
  try {
    before = await manifestBefore(reader, path.join(job.dir, 'link'));
  } finally {
    reader.close();
  }
}, 60_000);

afterAll(() => job?.cleanup());

describe("the manifest's names under an output folder named oddly", () => {
  it('are what path.relative gives, byte for byte', async () => {
    const s = await manifestOfJob({ job: job.jobsFile });
    expect(s).toMatchObject({ files: NAMES.length + 2, missing: [], changed: [], elsewhere: [] });
    for (const [i, name] of FILES.entries()) expect(readFileSync(path.join(job.dir, 'real', name), 'utf8')).toBe(before[i]);
    for (const name of NAMES) expect(before[0]).toContain(name.replace('\n', '\\n'));
  });

  it('are the same after the folder moved and the job names its new place', async () => {
    renameSync(path.join(job.dir, 'real'), path.join(job.dir, 'moved'));
    setOutputDir('moved/');
    const s = await manifestOfJob({ job: job.jobsFile });
    expect(s).toMatchObject({ files: NAMES.length + 2, missing: [], changed: [], elsewhere: [] });
    for (const [i, name] of FILES.entries()) expect(readFileSync(path.join(job.dir, 'moved', name), 'utf8')).toBe(before[i]);
  });
});
