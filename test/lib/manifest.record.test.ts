import { readFileSync, utimesSync, writeFileSync } from 'node:fs';
import type Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manifestOfJob } from '../../src/lib/manifest.js';
import { Ledger } from '../../src/ledger/index.js';
import { checksumFile } from '../../src/outputs/outputfs.js';
import { makeJob, type TestJob } from '../helpers/job.js';
import { simulate } from '../helpers/simulate.js';

/**
 * `darkroom manifest` lists the checksums the ledger recorded as each file was written: a file
 * whose size and modification time are what darkroom left is not read again (a million
 * outputs are not read to write a manifest); one modified since is, and named if its bytes
 * changed. A file written before checksums were recorded is read, its checksums recorded in
 * the ledger, and a decision made about it in review still stands.
 */
let job: TestJob;
const outputs: Record<string, { path: string; writtenMs: number }> = {};

function ledgerDb(l: Ledger): Database.Database {
  return (l as unknown as { db: Database.Database }).db;
}

beforeAll(async () => {
  job = await makeJob({ photos: 3, steps: [{ capability: 'enhance' }] });
  const sim = await simulate({ job, ledger: job.ledgerFile });
  const l = sim.ledger;
  for (const i of l.items.all()) {
    const f = ledgerDb(l).prepare('SELECT path, written_ms AS writtenMs FROM output_files WHERE path = ?').get(i.output_path) as {
      path: string;
      writtenMs: number;
    };
    outputs[i.rel_path] = f;
    // As a real run leaves them: modified (written) before the ledger recorded them.
    utimesSync(f.path, new Date(f.writtenMs - 1000), new Date(f.writtenMs - 1000));
  }
  // Written before darkroom recorded checksums, and accepted in review then (its SHA-256 unknown).
  const old = l.items.all().find((i) => i.rel_path === 'photo-1.png')!;
  ledgerDb(l).prepare('UPDATE output_files SET sha256 = NULL, sha512 = NULL WHERE path = ?').run(old.output_path);
  l.reviews.record(old.id, 'accept', null);
  l.close();
}, 60_000);

afterAll(() => job?.cleanup());

describe('darkroom manifest from the checksums recorded as the files were written', () => {
  it('takes and records the checksums of a file written before they were recorded; its decision still stands', async () => {
    const first = await manifestOfJob({ job: job.jobsFile });
    expect(first).toMatchObject({ files: 3, takenNow: 1, recordedNow: 1, changed: [], missing: [] });
    const l = Ledger.open(job.ledgerFile, { readonly: true });
    try {
      const id = l.items.all().find((i) => i.rel_path === 'photo-1.png')!.id;
      const p = l.reviews.photo(id)!;
      expect(p.sha256).toBe((await checksumFile(outputs['photo-1.png']!.path)).sha256);
      expect(p.decision).toBe('accept');
      expect(l.reviews.counts().accepted).toBe(1);
    } finally {
      l.close();
    }
    expect((await manifestOfJob({ job: job.jobsFile })).takenNow).toBe(0);
  });

  it('does not read a file whose size and time are as written; reads one modified since, and names it if it changed', async () => {
    const file = outputs['album 0/photo-0.jpg']!;
    const bytes = readFileSync(file.path);
    const recorded = readFileSync(`${job.outputDir}/manifest-sha256.txt`, 'utf8');
    // Other bytes, the same size, the time put back: not read, so listed as written.
    writeFileSync(file.path, Buffer.alloc(bytes.length, 7));
    utimesSync(file.path, new Date(file.writtenMs - 1000), new Date(file.writtenMs - 1000));
    const quiet = await manifestOfJob({ job: job.jobsFile });
    expect(quiet.changed).toEqual([]);
    expect(readFileSync(`${job.outputDir}/manifest-sha256.txt`, 'utf8')).toBe(recorded);
    // Modified now: read again, and named.
    utimesSync(file.path, new Date(), new Date());
    const seen = await manifestOfJob({ job: job.jobsFile });
    expect(seen.changed).toEqual(['album 0/photo-0.jpg']);
    expect(readFileSync(`${job.outputDir}/manifest-sha256.txt`, 'utf8')).toBe(recorded);
  });
});

describe('recording the checksums taken now', () => {
  it('finds each photo by its output path, not by reading every done photo (a million outputs, a few unrecorded)', () => {
    const l = Ledger.open(job.ledgerFile);
    const db = ledgerDb(l);
    const seen: string[] = [];
    const prepare = db.prepare.bind(db);
    db.prepare = ((sql: string) => (seen.push(sql), prepare(sql))) as typeof db.prepare;
    try {
      const out = outputs['photo-1.png']!;
      prepare('UPDATE output_files SET sha256 = NULL, sha512 = NULL WHERE path = ?').run(out.path);
      expect(l.outputFiles.recordChecksums([{ path: out.path, sha256: 'a'.repeat(64), sha512: 'b'.repeat(128) }])).toBe(1);
      const plan = seen.flatMap((sql) =>
        (prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...(sql.match(/\?/g) ?? []).map(() => 'x')) as { detail: string }[]).map((r) => r.detail),
      );
      expect(plan.some((d) => /^SEARCH items USING (COVERING )?INDEX items_output_path \(output_path=\?\)/.test(d))).toBe(true);
      expect(plan.filter((d) => /\bitems\b/.test(d) && /\(state=\?\)|^SCAN items/.test(d))).toEqual([]);
    } finally {
      db.prepare = prepare;
      l.close();
    }
  });
});
