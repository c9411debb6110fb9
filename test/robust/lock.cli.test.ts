import { existsSync, linkSync, mkdirSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { fingerprintKey } from '../../src/spec/key.js';
import { RunLock } from '../../src/ledger/lock.js';
import { openDatabase } from '../../src/ledger/open.js';
import { startSim } from '../../src/sim/server.js';
import { runCli } from '../helpers/cli.js';
import { makeJob } from '../helpers/job.js';
import { callsSeen, createsInFlight, look, slowCreates, waitForLedger } from '../helpers/ledger.js';

/**
 * Issue 12, point 5: one writer per ledger, whatever path reaches it. The lock was a file
 * beside the path (`<ledger>.lock`), so a symbolic link, a hard link or `sub/../` opened a
 * second writer, whose recover() marked the first run's in-flight creates ambiguous.
 */

const KEY = 'lock-test-key-7c1a9e';
const FP = fingerprintKey(KEY);
const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

const BUSY =
  /^darkroom: another darkroom run \(pid (\d+)\) is using the ledger .+; wait for it to end or stop it \(it runs on \S+ since \S+Z; darkroom status works alongside\)$/;

describe('a ledger in use, reached by another path', () => {
  it('a symbolic link, a hard link and `..` paths are each refused with the busy line; the first run is left alone', async () => {
    const sim = await slowCreates(KEY, 21);
    cleanups.push(() => sim.close());
    const job = await makeJob({ photos: 3, steps: [{ capability: 'enhance' }] });
    cleanups.push(job.cleanup);
    const first = runCli(['run', job.jobsFile, '--base-url', sim.apiUrl, '--quiet'], { DARKROOM_TEST_KEY: KEY });
    cleanups.push(async () => {
      if (first.child.exitCode === null) first.child.kill('SIGKILL');
      await first;
    });
    // All three creates in flight (three photos, three task slots) and arrived at the
    // simulator (`sending` is committed before a create leaves): the first run sends nothing
    // more until their answers come, a minute later.
    await waitForLedger(job.ledgerFile, (l) => createsInFlight(l) === 3);
    for (let i = 0; i < 600 && (sim.model.audit().keys[FP]?.creates ?? 0) < 3; i++) await new Promise((r) => setTimeout(r, 50));
    expect(sim.model.audit().keys[FP]?.creates).toBe(3);

    const stateDir = path.dirname(job.ledgerFile);
    const symlink = path.join(job.dir, 'link.db');
    symlinkSync(job.ledgerFile, symlink);
    const hardlink = path.join(job.dir, 'hard.db');
    linkSync(job.ledgerFile, hardlink);
    // `..` after a symbolic link goes up from the link's target: the kernel reads
    // <dir>/elsewhere/../darkroom.db as state/darkroom.db, its spelling says <dir>/darkroom.db.
    mkdirSync(path.join(stateDir, 'inner'));
    symlinkSync(path.join(stateDir, 'inner'), path.join(job.dir, 'elsewhere'));
    const throughLink = path.join(job.dir, 'elsewhere') + '/../darkroom.db';
    const plainDots = path.join(stateDir, 'inner') + '/../darkroom.db';

    const callsBefore = callsSeen(sim, FP);
    const refused = [];
    for (const p of [symlink, hardlink, throughLink, plainDots]) {
      // A refusal takes a second; a run let through would wait a minute on its creates.
      const second = await runCli(
        ['run', job.jobsFile, '--ledger', p, '--base-url', sim.apiUrl, '--quiet'],
        { DARKROOM_TEST_KEY: KEY },
        { timeoutMs: 20_000 },
      );
      const lines = second.stderr.trim().split('\n');
      refused.push({ path: p, code: second.code, lines: lines.length, busy: BUSY.test(lines[0]!), pid: Number(BUSY.exec(lines[0]!)?.[1]) });
    }
    const expected = { code: 2, lines: 1, busy: true, pid: first.child.pid };
    expect(refused).toEqual([symlink, hardlink, throughLink, plainDots].map((p) => ({ path: p, ...expected })));
    // The refused runs sent nothing, created no ledger of their own, and touched nothing:
    // the first run's creates are still in flight, none marked ambiguous.
    expect(callsSeen(sim, FP)).toBe(callsBefore);
    expect(existsSync(path.join(job.dir, 'darkroom.db'))).toBe(false);
    const subs = look<{ state: string }>(job.ledgerFile, 'SELECT state FROM submissions');
    expect(subs.length).toBeGreaterThan(0);
    expect(subs.every((s) => s.state === 'sending')).toBe(true);
    expect(look(job.ledgerFile, "SELECT COUNT(*) AS n FROM items WHERE state = 'held'")).toEqual([{ n: 0 }]);
    expect(first.child.exitCode).toBe(null);

    first.child.kill('SIGINT');
    expect((await first).code).toBe(130);
  }, 120_000);
});

describe('a lock held on another host', () => {
  // A key of its own: the first test's run was stopped with three creates in flight, whose
  // slots the key's machine-wide budget rightly keeps counted busy for a while.
  const KEY = 'lock-test-key-host-4e2d';
  const FP = fingerprintKey(KEY);
  it('cannot be checked from here: refused with the flag that takes it over; with that flag the run goes on', async () => {
    const sim = await startSim({ keys: [KEY], seed: 22, latency: { medianMs: 300, sigma: 0.1 } });
    cleanups.push(() => sim.close());
    const job = await makeJob({ photos: 2, steps: [{ capability: 'enhance' }] });
    cleanups.push(job.cleanup);
    // A run on the NAS took the lock (the ledger lives on a disk moved here since, say).
    mkdirSync(path.dirname(job.ledgerFile), { recursive: true });
    const db = openDatabase(job.ledgerFile);
    const nas = { pid: 4100, host: 'nas-7f3a', bootId: 'nas-boot', pidNs: null, procStart: null };
    new RunLock(db, job.ledgerFile, { self: () => nas, alive: () => true, startOf: () => null }).acquire({ command: 'run' });
    db.close();

    const args = ['run', job.jobsFile, '--base-url', sim.apiUrl, '--quiet'];
    const refused = await runCli(args, { DARKROOM_TEST_KEY: KEY });
    expect(refused.code).toBe(2);
    expect(refused.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(
        new RegExp(
          `^darkroom: the ledger ${job.ledgerFile} is locked by darkroom run on nas-7f3a \\(pid 4100, since \\S+Z\\), which cannot be checked from here; if that run is known to be gone, run again with --break-lock nas-7f3a:4100$`,
        ),
      ),
    ]);
    expect(callsSeen(sim, FP)).toBe(0);
    // A flag naming another holder breaks nothing.
    expect((await runCli([...args, '--break-lock', 'nas-7f3a:4101'], { DARKROOM_TEST_KEY: KEY })).code).toBe(2);

    const taken = await runCli([...args, '--break-lock', 'nas-7f3a:4100'], { DARKROOM_TEST_KEY: KEY });
    expect(taken.code).toBe(0);
    expect(look(job.ledgerFile, 'SELECT COUNT(*) AS n FROM run_lock')).toEqual([{ n: 0 }]);
  });
});
