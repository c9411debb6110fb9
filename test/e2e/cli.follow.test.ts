import { readdirSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startSim } from '../../src/sim/server.js';
import { runCli } from '../helpers/cli.js';
import { makeJob, writePhoto } from '../helpers/job.js';
import { waitForLedger } from '../helpers/ledger.js';

/*
 * `darkroom run --follow`, the real CLI against the HTTP simulator in real time: a folder
 * watched by scanning (as on a network mount) finds a new photo within input.poll +
 * input.settle; a run killed with SIGKILL while following, then run again with --follow,
 * loses and repeats nothing, and finds the photos that arrived while it was down.
 */

const KEY = 'follow-test-key-7a1c3e';
const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** The `run --json` events printed so far. */
const eventsOf = (stdout: string) =>
  stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { type: string; input: string; atMs: number });

async function until(ok: () => boolean, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!ok()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('darkroom run --follow', () => {
  it('watched by scanning (input.watch: poll), finds a new photo within input.poll + input.settle; killed with SIGKILL and run again, loses and repeats nothing', async () => {
    const sim = await startSim({ keys: [KEY], seed: 3, latency: { medianMs: 300, sigma: 0.2 } });
    cleanups.push(() => sim.close());
    const job = await makeJob({
      photos: 2,
      steps: [{ capability: 'enhance' }],
      extra: { input: { dir: './photos', watch: 'poll', poll: 1, settle: 1 } },
    });
    cleanups.push(job.cleanup);
    const env = { DARKROOM_TEST_KEY: KEY, DARKROOM_STATE_DIR: path.join(job.dir, 'key-state') };
    const args = ['run', job.jobsFile, '--base-url', sim.apiUrl, '--follow', '--json', '--quiet'];

    const first = runCli(args, env, { timeoutMs: 60_000 });
    let stdout = '';
    first.child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    await until(() => eventsOf(stdout).filter((e) => e.type === 'done').length === 2, 30_000);

    // A new photo on a folder scanned every second, taken once it kept still for a second.
    const wroteAt = Date.now();
    await writePhoto(path.join(job.inputDir, 'new/scan-1.jpg'), 11);
    await until(() => eventsOf(stdout).some((e) => e.type === 'found' && e.input === 'new/scan-1.jpg'), 15_000);
    const found = eventsOf(stdout).find((e) => e.type === 'found' && e.input === 'new/scan-1.jpg')!;
    // poll (1 s) + settle (1 s), and the time of a scan and a look on a shared machine.
    expect(found.atMs - wroteAt).toBeLessThanOrEqual(2_000 + 1_500);
    await until(() => eventsOf(stdout).some((e) => e.type === 'done' && e.input === 'new/scan-1.jpg'), 20_000);

    // Two more, and the run killed as soon as the first is recorded.
    await writePhoto(path.join(job.inputDir, 'new/scan-2.jpg'), 12);
    await writePhoto(path.join(job.inputDir, 'new/scan-3.jpg'), 13);
    await until(
      () => eventsOf(stdout).some((e) => e.type === 'found' && e.input.startsWith('new/scan-') && e.input !== 'new/scan-1.jpg'),
      15_000,
    );
    first.child.kill('SIGKILL');
    expect((await first).signal).toBe('SIGKILL');
    // While it is down, two more arrive: the next run's discovery finds them.
    await writePhoto(path.join(job.inputDir, 'down/scan-4.jpg'), 14);
    await writePhoto(path.join(job.inputDir, 'down/scan-5.jpg'), 15);

    const second = runCli(args, env, { timeoutMs: 60_000 });
    await waitForLedger(job.ledgerFile, (l) => l.status().done === 7, 40_000);
    second.child.kill('SIGINT');
    const r2 = await second;
    expect(r2.code).toBe(130);

    // Every photo once: one create each, every output there.
    const creates = Object.values(sim.model.audit().createsPerSource);
    expect(creates).toHaveLength(7);
    expect(creates.every((n) => n === 1)).toBe(true);
    const outputs = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((d) => (d.isDirectory() ? outputs(path.join(dir, d.name)) : [d.name]));
    expect(outputs(job.outputDir).filter((f) => !f.endsWith('.darkroom-tmp'))).toHaveLength(7);
  }, 120_000);
});
