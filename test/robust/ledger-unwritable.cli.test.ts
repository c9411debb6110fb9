import { readFileSync, writeFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { fingerprintKey } from '../../src/spec/key.js';
import { startSim } from '../../src/sim/server.js';
import { runCli } from '../helpers/cli.js';
import { makeJob } from '../helpers/job.js';
import { callsSeen } from './ledgerHelpers.js';

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
    ['a folder that cannot be made (ledger: in the jobs file)', [], '/sys/kernel/darkroom-test/darkroom.db', '/sys/kernel/darkroom-test/darkroom.db'],
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
