import { existsSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { fingerprintKey } from '../../src/spec/key.js';
import { startSim, type RunningSim } from '../../src/sim/server.js';
import { runCli } from '../helpers/cli.js';
import { makeJob } from '../helpers/job.js';

/**
 * Issue 4, point 5: SIGINT/SIGTERM make no new calls, let calls in flight finish or abort
 * them with their outcome recorded, and exit 130 within 5 s; a second SIGINT exits at once
 * and the ledger stays consistent; a second `run` on a ledger in use is refused while
 * `status` works alongside (L6).
 */

const KEY = 'signals-test-key-5f1e2d';
/**
 * Each test its own key store (DARKROOM_STATE_DIR): the creates one test leaves held keep
 * their slots on the key for as long as such a task could run, and each test has a new
 * simulator that knows nothing of them.
 */
const envFor = (job: { dir: string }) => ({ DARKROOM_TEST_KEY: KEY, DARKROOM_STATE_DIR: path.join(job.dir, 'key-state') });
const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** Wait until a read-only look at the ledger satisfies `ok` (the run is writing it). */
async function waitForLedger(file: string, ok: (db: Database.Database) => boolean, timeoutMs = 30_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (existsSync(file)) {
      try {
        const db = new Database(file, { readonly: true, fileMustExist: true });
        try {
          if (ok(db)) return;
        } finally {
          db.close();
        }
      } catch {
        // not migrated yet
      }
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('the ledger never reached the expected state');
}

function look<T>(file: string, sql: string): T[] {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    return db.prepare(sql).all() as T[];
  } finally {
    db.close();
  }
}

function integrity(file: string): string {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    return db.pragma('integrity_check', { simple: true }) as string;
  } finally {
    db.close();
  }
}

const sending = (db: Database.Database) =>
  (db.prepare("SELECT COUNT(*) AS n FROM submissions WHERE state = 'sending'").get() as { n: number }).n > 0;

async function slowCreates(): Promise<RunningSim> {
  // Every create is accepted and then answered a minute late: a create is surely in flight.
  const sim = await startSim({
    keys: [KEY],
    seed: 5,
    latency: { medianMs: 500, sigma: 0.1 },
    faults: { slowAnswer: { probability: 1, delayMs: 60_000, createsOnly: true } },
  });
  cleanups.push(() => sim.close());
  return sim;
}

describe('an interrupted run', () => {
  it('SIGINT with creates in flight: exit 130 within 5 s; the aborted creates are ambiguous and held, never resent', async () => {
    const sim = await slowCreates();
    const job = await makeJob({ photos: 4, steps: [{ capability: 'enhance' }] });
    cleanups.push(job.cleanup);
    const run = runCli(['run', job.jobsFile, '--base-url', sim.apiUrl, '--quiet'], envFor(job));
    await waitForLedger(job.ledgerFile, sending);
    const t0 = Date.now();
    run.child.kill('SIGINT');
    const r = await run;
    const took = Date.now() - t0;
    expect(r.code).toBe(130);
    expect(took).toBeLessThan(5000);
    expect(r.stderr).toMatch(/SIGINT: no new calls; calls in flight get 2 s to finish, then are aborted/);
    expect(r.stderr).toMatch(/interrupted: run `darkroom run \S+` again/);

    expect(integrity(job.ledgerFile)).toBe('ok');
    expect(look(job.ledgerFile, "SELECT COUNT(*) AS n FROM submissions WHERE state = 'sending'")).toEqual([{ n: 0 }]);
    const subs = look<{ state: string; error: string }>(job.ledgerFile, 'SELECT state, error FROM submissions');
    expect(subs.length).toBeGreaterThan(0);
    // Written and then aborted: the service may have made the task, so each is held.
    for (const s of subs) expect(s.state).toBe('ambiguous');
    const held = look<{ n: number }>(job.ledgerFile, "SELECT COUNT(*) AS n FROM items WHERE state = 'held' AND hold_kind = 'ambiguous'");
    expect(held[0]!.n).toBe(subs.length);
    expect(existsSync(`${job.ledgerFile}.lock`)).toBe(false);
    // Nothing was sent after the interrupt beyond what was in flight: one create per held photo.
    expect(Object.values(sim.model.audit().createsPerSource).every((n) => n === 1)).toBe(true);
  });

  it('SIGTERM while tasks run: exit 130 within 5 s, and the next run finishes them without a second create', async () => {
    const sim = await startSim({ keys: [KEY], seed: 6, latency: { medianMs: 4000, sigma: 0.1 } });
    cleanups.push(() => sim.close());
    const job = await makeJob({ photos: 3, steps: [{ capability: 'enhance' }] });
    cleanups.push(job.cleanup);
    const run = runCli(['run', job.jobsFile, '--base-url', sim.apiUrl, '--quiet'], envFor(job));
    await waitForLedger(
      job.ledgerFile,
      (db) => (db.prepare("SELECT COUNT(*) AS n FROM items WHERE state = 'active'").get() as { n: number }).n === 3,
    );
    const t0 = Date.now();
    run.child.kill('SIGTERM');
    const r = await run;
    expect(r.code).toBe(130);
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(integrity(job.ledgerFile)).toBe('ok');

    const again = await runCli(['run', job.jobsFile, '--base-url', sim.apiUrl, '--quiet'], envFor(job));
    expect(again.code).toBe(0);
    expect(Object.values(sim.model.audit().createsPerSource)).toEqual([1, 1, 1]);
  });

  it('a second SIGINT exits at once; the ledger stays consistent and the next run recovers it', async () => {
    const sim = await slowCreates();
    // The creates in flight at the interrupt are held by the next run, and keep their task
    // slots for as long as such a task could run: no task was ever seen to end, so that is
    // the polling cap at most (src/scheduler/taskBound.ts), here 6 s, not the default 10 min.
    const job = await makeJob({ photos: 4, steps: [{ capability: 'enhance' }], extra: { limits: { pollCapMinutes: 0.1 } } });
    cleanups.push(job.cleanup);
    const run = runCli(['run', job.jobsFile, '--base-url', sim.apiUrl, '--quiet'], envFor(job));
    await waitForLedger(job.ledgerFile, sending);
    run.child.kill('SIGINT');
    await new Promise((r) => setTimeout(r, 150));
    const t0 = Date.now();
    run.child.kill('SIGINT');
    const r = await run;
    expect(r.code).toBe(130);
    expect(Date.now() - t0).toBeLessThan(1000);
    expect(r.stderr).toMatch(/second interrupt, exiting now/);
    expect(integrity(job.ledgerFile)).toBe('ok');

    // The next run (the service healthy again) holds whatever was still `sending`, and
    // finishes the rest; nothing is created twice.
    const healthy = await startSim({ keys: [KEY], seed: 7, latency: { medianMs: 300, sigma: 0.1 } });
    cleanups.push(() => healthy.close());
    const next = await runCli(['run', job.jobsFile, '--base-url', healthy.apiUrl, '--quiet'], envFor(job));
    expect(next.code).toBe(1);
    expect(look(job.ledgerFile, "SELECT COUNT(*) AS n FROM submissions WHERE state = 'sending'")).toEqual([{ n: 0 }]);
    const s = JSON.parse((await runCli(['status', job.jobsFile, '--json'])).stdout);
    expect(s.held).toBeGreaterThan(0);
    expect(s.done + s.held).toBe(4);
    for (const p of s.problems) expect(p.reason).toMatch(/outcome unknown/);
    // A create aborted by the second interrupt may or may not have reached the service (on a
    // loaded machine it often has not): held either way, and never sent again. So each photo
    // is created at most once in all, and each one done exactly once.
    const creates = [...Object.values(sim.model.audit().createsPerSource), ...Object.values(healthy.model.audit().createsPerSource)];
    expect(creates.every((n) => n === 1)).toBe(true);
    const total = creates.reduce((a, b) => a + b, 0);
    expect(total).toBeGreaterThanOrEqual(s.done);
    expect(total).toBeLessThanOrEqual(4);
  });
});

describe('one runner per ledger (L6)', () => {
  it('a second run is refused with a clear message, exit 2, while status works alongside', async () => {
    const sim = await slowCreates();
    const job = await makeJob({ photos: 3, steps: [{ capability: 'enhance' }] });
    cleanups.push(job.cleanup);
    const first = runCli(['run', job.jobsFile, '--base-url', sim.apiUrl, '--quiet'], envFor(job));
    await waitForLedger(job.ledgerFile, sending);

    const second = await runCli(['run', job.jobsFile, '--base-url', sim.apiUrl], envFor(job));
    expect(second.code).toBe(2);
    expect(second.stderr.trim()).toMatch(
      /^darkroom: another darkroom run \(pid \d+\) is using the ledger .*darkroom\.db; wait for it to end or stop it/,
    );
    expect(sim.model.audit().keys[fingerprintKey(KEY)]!.calls).toBeGreaterThan(0);

    const status = await runCli(['status', job.jobsFile, '--json']);
    expect(status.code).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({ total: 3 });

    const retry = await runCli(['retry', '--held', '--yes', job.jobsFile]);
    expect([0, 2]).toContain(retry.code); // nothing held yet (0), or refused as a second writer (2)

    first.child.kill('SIGINT');
    expect((await first).code).toBe(130);
  });
});
