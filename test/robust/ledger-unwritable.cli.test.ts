import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { fingerprintKey } from '../../src/spec/key.js';
import { startSim } from '../../src/sim/server.js';
import { runCli } from '../helpers/cli.js';
import { makeJob } from '../helpers/job.js';
import { callsSeen } from '../helpers/ledger.js';

/**
 * Issue 12, point 10a: a ledger folder that cannot be written gave "unexpected error: EACCES …"
 * (exit 1). Now it is one line naming the ledger, why, and where to put it instead; exit 2,
 * before any call. /sys/kernel is unwritable for root and users alike (mode bits would not
 * stop root, which these tests run as).
 */

const KEY = 'unwritable-test-key-4e2f';
const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

const LINE = /^darkroom: cannot create or write the ledger (\S+): .+; point --ledger \(or ledger: in the jobs file\) at a writable place$/;

describe('a ledger that cannot be written', () => {
  it.each([
    ['a read-only folder (--ledger)', ['--ledger', '/sys/kernel/darkroom.db'], null, '/sys/kernel/darkroom.db'],
    [
      'a folder that cannot be made (ledger: in the jobs file)',
      [],
      '/sys/kernel/darkroom-test/darkroom.db',
      '/sys/kernel/darkroom-test/darkroom.db',
    ],
    // Node's own recursive mkdir loops for ever under procfs (src/fsdirs.ts): said at once instead.
    ['a folder under procfs', ['--ledger', '/proc/darkroom-test/darkroom.db'], null, '/proc/darkroom-test/darkroom.db'],
  ] as const)('%s: exit 2, one line naming it and what to do, no call made', async (_name, flags, inYaml, shown) => {
    const sim = await startSim({ keys: [KEY], seed: 3 });
    cleanups.push(() => sim.close());
    const job = await makeJob({ photos: 2, steps: [{ capability: 'enhance' }] });
    cleanups.push(job.cleanup);
    if (inYaml) writeFileSync(job.jobsFile, readFileSync(job.jobsFile, 'utf8').replace('./state/darkroom.db', inYaml));

    const r = await runCli(['run', job.jobsFile, '--base-url', sim.apiUrl, '--quiet', ...flags], { DARKROOM_TEST_KEY: KEY });
    expect(r.code).toBe(2);
    const lines = r.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(LINE);
    expect(LINE.exec(lines[0]!)![1]).toBe(shown);
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(callsSeen(sim, fingerprintKey(KEY))).toBe(0);
  });
});

/** Run with the ledger at `ledger` (relative to the job's folder, made by `setup`); the result and the job. */
async function runWithLedger(ledger: string, setup: (dir: string) => void) {
  const sim = await startSim({ keys: [KEY], seed: 3 });
  cleanups.push(() => sim.close());
  const job = await makeJob({ photos: 2, steps: [{ capability: 'enhance' }] });
  cleanups.push(job.cleanup);
  setup(job.dir);
  writeFileSync(job.jobsFile, readFileSync(job.jobsFile, 'utf8').replace('./state/darkroom.db', ledger));
  const r = await runCli(['run', job.jobsFile, '--base-url', sim.apiUrl, '--quiet'], { DARKROOM_TEST_KEY: KEY });
  expect(r.stderr).not.toMatch(/\n\s+at |unexpected error/);
  expect(callsSeen(sim, fingerprintKey(KEY))).toBe(0);
  return { r, dir: job.dir };
}

describe('a ledger path that names something else', () => {
  it.each([
    ['a path through a file', './notes/x.db', 'notes/x.db', /: a file is where its folder should be \(EEXIST at \S+notes\);/],
    ['a folder', './photos', 'photos', /: it is a folder, not a file \(name a file in it, such as \S+photos\/darkroom\.db\);/],
  ] as const)('%s: exit 2, the unwritable line naming it', async (_name, ledger, shown, why) => {
    const { r, dir } = await runWithLedger(ledger, (d) => writeFileSync(path.join(d, 'notes'), 'x'));
    expect(r.code).toBe(2);
    const lines = r.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(LINE);
    expect(LINE.exec(lines[0]!)![1]).toBe(path.join(dir, shown));
    expect(lines[0]).toMatch(why);
    expect(readFileSync(path.join(dir, 'notes'), 'utf8')).toBe('x');
  });

  it('a small file that is not a ledger is left untouched: exit 2, one line, as a damaged ledger', async () => {
    const { r, dir } = await runWithLedger('./notes.txt', (d) => writeFileSync(path.join(d, 'notes.txt'), 'x'));
    const file = path.join(dir, 'notes.txt');
    expect(r.code).toBe(2);
    const lines = r.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toBe(
      `darkroom: ${file} is not a darkroom ledger: the file exists and is not a SQLite database, so it was left untouched; ` +
        'point --ledger (or ledger: in the jobs file) at a new file or an existing ledger',
    );
    expect(readFileSync(file, 'utf8')).toBe('x');
    expect(existsSync(`${file}-wal`) || existsSync(`${file}-shm`)).toBe(false);
  });
});
