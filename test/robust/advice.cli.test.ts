import { existsSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { Ledger } from '../../src/ledger/index.js';
import { startSim } from '../../src/sim/server.js';
import { discovered } from '../helpers/discovered.js';
import { runCli } from '../helpers/cli.js';
import { makeJob } from '../helpers/job.js';
import { simulate } from '../helpers/simulate.js';

/**
 * Each piece of advice darkroom prints must work when followed, at the moment it is given:
 * never "run again" while a run holds the ledger (the lock refuses it), never `retry --held`
 * for slots nothing held fills (it answers "nothing is held").
 */

const KEY = 'advice-test-key-7d2e91';
const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

function count(file: string, sql: string): number {
  if (!existsSync(file)) return 0;
  try {
    const db = new Database(file, { readonly: true, fileMustExist: true });
    try {
      return (db.prepare(sql).get() as { n: number }).n;
    } finally {
      db.close();
    }
  } catch {
    return 0; // not migrated yet
  }
}

describe('advice that leads somewhere', () => {
  it('paid, not yet downloaded: while a run holds the ledger, status says that run fetches them; after it, to run again', async () => {
    const job = await makeJob({ photos: 1 });
    cleanups.push(job.cleanup);
    const ledger = Ledger.open(job.ledgerFile);
    discovered(ledger, ['photo.jpg']);
    const id = ledger.items.all()[0]!.id;
    ledger.items.move(id, 'queued', 'uploading', { key_fp: 'k_test' });
    ledger.items.move(id, 'uploading', 'uploaded', { image_url: 'https://x/1' });
    ledger.items.move(id, 'uploaded', 'submitting');
    ledger.items.move(id, 'submitting', 'active', { task_id: 't1' });
    ledger.items.move(id, 'active', 'succeeded', { result_url: 'https://r/1' });
    // This test process holds the ledger as a run does.
    const lock = ledger.acquireRunLock({ command: 'run' });
    try {
      const during = await runCli(['status', job.jobsFile]);
      expect(during.code).toBe(0);
      expect(during.stdout).toContain(`paid     1 paid, not yet downloaded: the run going on (pid ${process.pid}) fetches them`);
      expect(during.stdout).not.toMatch(/again to fetch them/);
    } finally {
      lock.release();
      ledger.close();
    }
    const after = await runCli(['status', job.jobsFile]);
    expect(after.stdout).toContain(`paid     1 paid, not yet downloaded: run \`darkroom run ${job.jobsFile}\` again to fetch them`);
  }, 30_000);

  it('rejected in review: while a run holds the ledger, status says retry --rejected once it has ended (the lock refuses it before)', async () => {
    const job = await makeJob({ photos: 1, steps: [{ capability: 'enhance' }] });
    cleanups.push(job.cleanup);
    const done = await simulate({ job, ledger: job.ledgerFile });
    expect(done.result.exitCode).toBe(0);
    const ledger = done.ledger;
    const id = ledger.items.all()[0]!.id;
    ledger.reviews.record(id, 'reject', ledger.reviews.photo(id)!.sha256, 'too dark');
    const redo = `\`darkroom retry --rejected ${job.jobsFile}\` to redo`;
    const lock = ledger.acquireRunLock({ command: 'run' });
    try {
      const during = await runCli(['status', job.jobsFile]);
      expect(during.stdout).toContain(
        `review   0 accepted · 1 rejected · 0 not reviewed · ${redo} once the run going on (pid ${process.pid}) has ended`,
      );
      // What it would meet now: the lock.
      const now = await runCli(['retry', '--rejected', job.jobsFile, '--yes']);
      expect(now.code).not.toBe(0);
      expect(now.stderr).toContain(`pid ${process.pid}`);
    } finally {
      lock.release();
      ledger.close();
    }
    const after = await runCli(['status', job.jobsFile]);
    expect(after.stdout).toMatch(new RegExp(`^review .* · ${redo.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`, 'm'));
    const followed = await runCli(['retry', '--rejected', job.jobsFile, '--yes']);
    expect(followed.code, followed.stderr).toBe(0);
    expect(followed.stdout).toContain('re-queued 1 rejected photo(s)');
  }, 30_000);

  it('after Ctrl-C with tasks at the service: status says the next run polls them, not retry --held; and the next run does', async () => {
    const sim = await startSim({ keys: [KEY], seed: 3, latency: { medianMs: 4000, sigma: 0.1 } });
    cleanups.push(() => sim.close());
    const job = await makeJob({ photos: 3, steps: [{ capability: 'enhance' }] });
    cleanups.push(job.cleanup);
    const env = { DARKROOM_TEST_KEY: KEY, DARKROOM_STATE_DIR: path.join(job.dir, 'key-state') };
    const run = runCli(['run', job.jobsFile, '--base-url', sim.apiUrl], env);
    const end = Date.now() + 30_000;
    while (count(job.ledgerFile, "SELECT COUNT(*) AS n FROM items WHERE state = 'active'") < 3 && Date.now() < end)
      await new Promise((r) => setTimeout(r, 50));
    run.child.kill('SIGINT');
    expect((await run).code).toBe(130);

    const s = await runCli(['status', job.jobsFile], env);
    const slots = s.stdout.split('\n').find((l) => l.startsWith('slots '));
    expect(slots).toMatch(/3 counted busy by a stopped run's tasks \(they may still run at the service\)/);
    expect(slots).toContain(`the next \`darkroom run ${job.jobsFile}\` polls the tasks`);
    expect(s.stdout).not.toMatch(/retry --held/);
    const json = JSON.parse((await runCli(['status', job.jobsFile, '--json'], env)).stdout) as { heldSlots: unknown[] };
    expect(json.heldSlots).toEqual([expect.objectContaining({ deadTasks: 3, freedBy: null })]);

    // Following it: the next run polls those tasks to their end, one create each.
    const again = await runCli(['run', job.jobsFile, '--base-url', sim.apiUrl], env);
    expect(again.code, again.stderr).toBe(0);
    expect(Object.values(sim.model.audit().createsPerSource)).toEqual([1, 1, 1]);
  }, 60_000);
});
