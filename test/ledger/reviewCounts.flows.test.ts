import { copyFileSync, renameSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decide, manifest, retry } from '../../src/index.js';
import { Ledger } from '../../src/ledger/index.js';
import { readStandingCounts } from '../../src/ledger/reviews.js';
import { makeJob, setSteps, writePhoto, type TestJob } from '../helpers/job.js';
import { simulate, VIRTUAL_START_MS } from '../helpers/simulate.js';

/**
 * The standing decisions the ledger counts (migrations/015_review_counts.sql) through whole
 * nights of the real code, each count checked against the rows (readStandingCounts) after
 * each step: decisions made and taken back, some of them by another connection while a run
 * writes the same ledger; `retry --rejected` with and without a mode and the redone photos
 * decided again; an input whose content changed after its output was reviewed; a name that
 * moved to another photo (its old photo loses that output); an input renamed (its output
 * retired, the decision following the photo to the new one); checksums taken by `manifest`
 * for an output accepted before they were kept; `--redo-steps` and a step list
 * changed between runs (the old list's files forgotten).
 */
const STEPS = [{ capability: 'restore' }, { capability: 'upscale', resolution: '4K' }];
let job: TestJob;
let night = 0;

/** The kept counts, and the counts of the rows, of the ledger as it is on disk. */
function counts(): { kept: { accepted: number; rejected: number }; rows: { accepted: number; rejected: number } } {
  const db = new Database(job.ledgerFile, { readonly: true });
  try {
    const n = (d: string) => (db.prepare('SELECT n FROM review_counts WHERE decision = ?').get(d) as { n: number }).n;
    return { kept: { accepted: n('accept'), rejected: n('reject') }, rows: readStandingCounts(db) };
  } finally {
    db.close();
  }
}

function expectKeptAsRows(when: string): { accepted: number; rejected: number } {
  const c = counts();
  expect(c.kept, when).toEqual(c.rows);
  return c.kept;
}

/** One more night: the real runner against the simulator, on the job's ledger. Its tasks created. */
async function runNight(opts: Parameters<typeof simulate>[0] = {}): Promise<number> {
  night++;
  const s = await simulate({ job, ledger: job.ledgerFile, startMs: VIRTUAL_START_MS + night * 86_400_000, seed: night, ...opts });
  s.ledger.close();
  return s.audit.tasks;
}

/** The done photos, by path, with their output's checksum. */
function done(): { path: string; sha256: string | null }[] {
  const l = Ledger.open(job.ledgerFile, { readonly: true });
  try {
    return l.items
      .all()
      .filter((i) => i.state === 'done')
      .map((i) => ({ path: i.rel_path, sha256: l.reviews.photo(i.id)!.sha256 }))
      .sort((a, b) => a.path.localeCompare(b.path));
  } finally {
    l.close();
  }
}

beforeAll(async () => {
  job = await makeJob({ photos: 12, steps: STEPS });
  await runNight({ sim: { outcomes: { fail: 0.15, error: 0.05, other: 0 } } });
}, 60_000);

afterAll(() => job?.cleanup());

describe('the standing decisions the ledger counts, through whole nights', () => {
  it('equal the rows after decisions made and taken back', async () => {
    const photos = done();
    expect(photos.length).toBeGreaterThan(8);
    for (const [i, p] of photos.entries()) await decide(job.jobsFile, p.path, i % 3 === 0 ? 'reject' : 'accept');
    await decide(job.jobsFile, photos[1]!.path, 'clear');
    await decide(job.jobsFile, photos[2]!.path, 'reject', { reason: 'soft' });
    const c = expectKeptAsRows('after the decisions');
    expect(c.accepted + c.rejected).toBe(photos.length - 1);
    expect(c.rejected).toBeGreaterThan(2);
  });

  it('equal the rows after retry --rejected without and with a mode, a night that redoes them while decisions are made beside it, and the redone decided again', async () => {
    const firstRejected = done().filter((_, i) => i % 3 === 0);
    expect((await retry(job.jobsFile, { rejected: true, failed: true })).recreated).toBeGreaterThan(2);
    expectKeptAsRows('after retry --rejected');
    // Beside the run: another connection records and clears decisions on the done photos as it goes.
    const other = Ledger.open(job.ledgerFile);
    let besides = 0;
    const pending: Promise<void>[] = [];
    await runNight({
      onEvent: (e) => {
        if (e.type !== 'done') return;
        pending.push(
          new Promise((resolve) =>
            setImmediate(() => {
              const id = other.reviews.idOf(e.input)!;
              const p = other.reviews.photo(id)!;
              if (p.state === 'done') {
                other.reviews.record(id, besides % 2 === 0 ? 'accept' : 'reject', p.sha256);
                if (besides % 5 === 4) other.reviews.record(id, 'clear', p.sha256);
                besides++;
              }
              resolve();
            }),
          ),
        );
      },
    });
    await Promise.all(pending);
    other.close();
    expect(besides).toBeGreaterThan(2);
    expectKeptAsRows('after a night with decisions beside it');
    for (const p of firstRejected) await decide(job.jobsFile, p.path, 'reject', { reason: 'still soft' });
    expectKeptAsRows('after the redone photos were rejected again');
    // Those, and any the other connection rejected.
    expect((await retry(job.jobsFile, { rejected: true, mode: 'portrait' })).recreated).toBeGreaterThanOrEqual(firstRejected.length);
    expectKeptAsRows('after retry --rejected --mode portrait');
    await runNight();
    expectKeptAsRows('after the night that redid them');
    for (const p of firstRejected) await decide(job.jobsFile, p.path, 'accept');
    expectKeptAsRows('after the redone photos were accepted');
  });

  it('equal the rows after an input changed, and a name that moved to another photo', async () => {
    const photos = done();
    for (const p of photos) await decide(job.jobsFile, p.path, 'accept');
    const before = expectKeptAsRows('all accepted');
    // One input's content changed after its output was reviewed: it is made again.
    await writePhoto(path.join(job.inputDir, photos[0]!.path), 97, path.extname(photos[0]!.path) === '.png' ? 'png' : 'jpeg');
    // Another's name now holds a third photo's content: the name moves to that photo.
    copyFileSync(path.join(job.inputDir, photos[2]!.path), path.join(job.inputDir, photos[1]!.path));
    expect(await runNight()).toBeGreaterThan(0);
    const after = expectKeptAsRows('after the night that found them');
    expect(after.accepted).toBeLessThan(before.accepted);
  });

  it('equal the rows after an input renamed (its decision follows it to the new output) and checksums taken by manifest', async () => {
    const photos = done();
    for (const p of photos) await decide(job.jobsFile, p.path, 'accept');
    const before = expectKeptAsRows('all accepted');
    renameSync(path.join(job.inputDir, photos[0]!.path), path.join(job.inputDir, `renamed ${path.basename(photos[0]!.path)}`));
    await runNight();
    expect(expectKeptAsRows('after the night that renamed its output')).toEqual(before);
    // An output written before darkroom kept checksums, accepted as it was shown; the manifest takes its checksums.
    const db = new Database(job.ledgerFile);
    const { name, output } = db
      .prepare(
        "SELECT rel_path AS name, output_path AS output FROM items WHERE state = 'done' AND output_path IS NOT NULL ORDER BY id LIMIT 1",
      )
      .get() as { name: string; output: string };
    db.prepare('UPDATE output_files SET sha256 = NULL, sha512 = NULL WHERE path = ?').run(output);
    db.close();
    const unsure = expectKeptAsRows('after its checksums were forgotten');
    expect(unsure.accepted).toBe(before.accepted - 1);
    await decide(job.jobsFile, name, 'accept');
    expect(expectKeptAsRows('after it was accepted as it was shown')).toEqual(before);
    expect((await manifest(job.jobsFile)).takenNow).toBe(1);
    expect(expectKeptAsRows('after the manifest took its checksums')).toEqual(before);
  });

  it('equal the rows after --redo-steps and a step list changed between runs', async () => {
    for (const p of done()) await decide(job.jobsFile, p.path, p.path.includes('album') ? 'reject' : 'accept');
    expectKeptAsRows('before the step list changed');
    // Outputs made for real (not the input's bytes passed through): the redone photos' outputs are other files.
    setSteps(job, [{ capability: 'restore' }]);
    expect(await runNight({ sim: { processing: 'sharp' }, runOptions: { redoSteps: true } })).toBeGreaterThan(0);
    const redone = expectKeptAsRows('after --redo-steps under a shorter list');
    expect(redone.accepted + redone.rejected).toBe(0);
    for (const p of done()) await decide(job.jobsFile, p.path, 'reject');
    setSteps(job, STEPS);
    expect(await runNight({ sim: { processing: 'sharp' }, runOptions: { redoSteps: true } })).toBeGreaterThan(0);
    expectKeptAsRows('after --redo-steps back to the first list');
  });
});
