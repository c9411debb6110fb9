import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manifestOfJob, type ManifestSummary } from '../../src/lib/manifest.js';
import { Ledger } from '../../src/ledger/index.js';
import { makeJob, writePhoto, type TestJob } from '../helpers/job.js';
import { manifestBefore } from './manifest.reference.js';
import { simulate } from '../helpers/simulate.js';

/**
 * `darkroom manifest` writes what it wrote before it read its rows by pages: the three files
 * byte for byte as the code before that change writes them (manifest.reference.ts, over this
 * very ledger and these files), over a job with most of what a manifest meets — two steps with an
 * option, kept intermediates and JSON sidecars, names with a backslash, a line break, a comma
 * and a leading `=`, one photo under two names, a photo accepted and one rejected
 * with a reason in review, a file written before checksums were recorded, one deleted and one
 * changed since.
 */
const FILES = ['manifest-sha256.txt', 'manifest-sha512.txt', 'provenance.csv'] as const;

let job: TestJob;
let summary: ManifestSummary;
let before: [string, string, string];

beforeAll(async () => {
  job = await makeJob({
    photos: 4,
    steps: [{ capability: 'restore' }, { capability: 'upscale', resolution: '4K' }],
    extra: {
      output: { dir: './out', metadata: 'none', sidecar: 'json', keepIntermediates: true },
    },
  });
  for (const [i, name] of ['back\\slash.jpg', 'line\nbreak.jpg', 'comma, and space.jpg', '=HYPERLINK("x").jpg'].entries()) {
    await writePhoto(path.join(job.inputDir, 'odd', name), 20 + i);
  }
  // One photo under two names: paid once, an output for each.
  mkdirSync(path.join(job.inputDir, 'again'), { recursive: true });
  copyFileSync(path.join(job.inputDir, 'photo-1.png'), path.join(job.inputDir, 'again', 'photo-1-copy.png'));
  const sim = await simulate({ job, ledger: job.ledgerFile });
  expect(sim.result.status.problems).toEqual([]);
  const l = sim.ledger;
  const byPath = (p: string) => l.items.all().find((i) => i.rel_path === p)!;
  const sha = (id: number) => l.reviews.photo(id)!.sha256;
  const accepted = byPath('nested/deep/photo-2.webp');
  l.reviews.record(accepted.id, 'accept', sha(accepted.id));
  const rejected = byPath('odd/comma, and space.jpg');
  l.reviews.record(rejected.id, 'reject', sha(rejected.id), 'too "warm", and soft');
  // Written before darkroom recorded checksums (a ledger older than migrations/009).
  const db = (l as unknown as { db: Database.Database }).db;
  db.prepare('UPDATE output_files SET sha256 = NULL, sha512 = NULL WHERE path = ?').run(byPath('album 0/photo-0.jpg').output_path);
  l.close();
  rmSync(path.join(job.outputDir, 'album 1', 'photo-3.jpg.json'));
  const changed = path.join(job.outputDir, 'odd', 'back\\slash.jpg');
  expect(existsSync(changed)).toBe(true);
  writeFileSync(changed, Buffer.concat([readFileSync(changed), Buffer.from('edited')]));
  const reader = Ledger.open(job.ledgerFile, { readonly: true });
  try {
    before = await manifestBefore(reader, job.outputDir);
  } finally {
    reader.close();
  }
  summary = await manifestOfJob({ job: job.jobsFile });
}, 120_000);

afterAll(() => job?.cleanup());

describe('darkroom manifest over a job of every kind of file', () => {
  it.each(FILES.map((name, i) => [name, i] as const))('writes %s exactly as before', (name, i) => {
    expect(readFileSync(path.join(job.outputDir, name), 'utf8')).toBe(before[i]);
    expect(before[i]!.split('\n').length).toBeGreaterThan(8);
  });

  it('names the missing and changed files and the checksums taken now', () => {
    expect(summary).toMatchObject({
      files: 26,
      outputs: 9,
      missing: ['album 1/photo-3.jpg.json'],
      changed: ['odd/back\\slash.jpg'],
      takenNow: 1,
    });
  });
});
