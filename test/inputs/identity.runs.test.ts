import { copyFileSync as copy, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { filesUnder, makeJob, writePhoto } from '../helpers/job.js';
import { pixelPrint } from '../helpers/metadata.js';
import { simSession, simulate, type SimSession } from '../helpers/simulate.js';

const cleanups: (() => void)[] = [];
function copyFileSync(from: string, to: string): void {
  mkdirSync(path.dirname(to), { recursive: true });
  copy(from, to);
}
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

const uploads = (s: SimSession) => Object.values(s.model.audit().keys)[0]!.uploads;
const calls = (s: SimSession) => Object.values(s.model.audit().keys)[0]!.calls;

/** The simulator passes bytes through: an output equals the input it was made from. */
describe('inputs identified by content, across runs', () => {
  it('processes a photo found twice once, writes it under both names, follows a rename, and redoes a changed file', async () => {
    const job = await makeJob({ photos: 0, steps: [{ capability: 'enhance' }] });
    cleanups.push(job.cleanup);
    const inp = (p: string) => path.join(job.inputDir, p);
    await writePhoto(inp('a.jpg'), 1);
    await writePhoto(inp('b.png'), 2, 'png');
    copyFileSync(inp('a.jpg'), inp('copies/a (copy).jpg'));
    const s = simSession({ job, sim: { seed: 7 } });

    // run 1: two distinct photos under three names
    const r1 = (await simulate(s)).result;
    expect(r1.exitCode).toBe(0);
    expect(r1.status).toMatchObject({ total: 2, done: 2 });
    expect(uploads(s)).toBe(2);
    expect(Object.values(s.model.audit().createsPerSource)).toEqual([1, 1]);
    expect(filesUnder(job.outputDir)).toEqual(['a.jpg', 'b.png', 'copies/a (copy).jpg']);
    // passthrough processing: an output's pixels are its input's (its metadata says what was done)
    expect(await pixelPrint(path.join(job.outputDir, 'copies/a (copy).jpg'))).toBe(await pixelPrint(inp('a.jpg')));

    // run 2: b.png renamed, a third copy of a.jpg added: no call at all, outputs written from the results already had
    renameSync(inp('b.png'), inp('renamed b.png'));
    copyFileSync(inp('a.jpg'), inp('later/a again.jpg'));
    const before = calls(s);
    const r2 = (await simulate(s)).result;
    expect(r2.exitCode).toBe(0);
    expect(calls(s)).toBe(before);
    expect(r2.status).toMatchObject({ total: 2, done: 2 });
    // b.png's output went with its name: renamed, not kept beside the new one
    expect(filesUnder(job.outputDir)).toEqual(['a.jpg', 'copies/a (copy).jpg', 'later/a again.jpg', 'renamed b.png']);
    expect(await pixelPrint(path.join(job.outputDir, 'renamed b.png'))).toBe(await pixelPrint(inp('renamed b.png')));

    // run 3: a.jpg changed (its copies did not): a.jpg is processed again, alone
    const oldA = readFileSync(inp('a.jpg'));
    await writePhoto(inp('a.jpg'), 9);
    const r3 = (await simulate(s)).result;
    expect(r3.exitCode).toBe(0);
    expect(uploads(s)).toBe(3);
    expect(r3.status).toMatchObject({ total: 3, done: 3 });
    expect(await pixelPrint(path.join(job.outputDir, 'a.jpg'))).toBe(await pixelPrint(inp('a.jpg')));
    expect(await pixelPrint(path.join(job.outputDir, 'copies/a (copy).jpg'))).toBe(await pixelPrint(oldA));

    // run 4: the renamed b changed too: its item is reused, so the count stays
    await writePhoto(inp('renamed b.png'), 11, 'png');
    const r4 = (await simulate(s)).result;
    expect(uploads(s)).toBe(4);
    expect(r4.status).toMatchObject({ total: 3, done: 3 });
    expect(await pixelPrint(path.join(job.outputDir, 'renamed b.png'))).toBe(await pixelPrint(inp('renamed b.png')));

    // run 5: nothing changed, nothing to do
    const quiet = calls(s);
    expect((await simulate(s)).result.exitCode).toBe(0);
    expect(calls(s)).toBe(quiet);
  });

  it("never overwrites a file it did not write, and does not pay again for a name whose twin's output is gone", async () => {
    const job = await makeJob({ photos: 0, steps: [{ capability: 'enhance' }] });
    cleanups.push(job.cleanup);
    const inp = (p: string) => path.join(job.inputDir, p);
    await writePhoto(inp('a.jpg'), 1);
    const s = simSession({ job, sim: { seed: 7 } });
    expect((await simulate(s)).result.exitCode).toBe(0);
    // the operator moved the output away, then added a copy of the photo
    rmSync(path.join(job.outputDir, 'a.jpg'));
    copyFileSync(inp('a.jpg'), inp('copy.jpg'));
    // and a stranger's file sits where another new photo's output goes
    await writePhoto(inp('c.jpg'), 3);
    writeFileSync(path.join(job.outputDir, 'c.jpg'), "not darkroom's");
    const uploadsBefore = uploads(s);
    const r = (await simulate(s)).result;
    // c.jpg's output path is taken: caught before its upload, so nothing is paid for it (issue 12, point 8)
    expect(r.status).toMatchObject({ total: 1, done: 1, failed: 0, skipped: 1, paidNotDownloaded: 0 });
    expect(r.status.problems.find((p) => p.path === 'c.jpg')!.reason).toMatch(/c\.jpg already exists and was not written by this ledger/);
    expect(uploads(s)).toBe(uploadsBefore);
    expect(Object.values(s.model.audit().createsPerSource)).toEqual([1]);
    expect(readFileSync(path.join(job.outputDir, 'c.jpg'), 'utf8')).toBe("not darkroom's");
    expect(filesUnder(job.outputDir)).toEqual(['c.jpg']);
  });
});
