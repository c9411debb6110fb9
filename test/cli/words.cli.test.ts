import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startSim, type StartSimOptions } from '../../src/sim/server.js';
import { createsInFlight, waitForLedger } from '../helpers/ledger.js';
import { runCli } from '../helpers/cli.js';
import { makeJob, writePhoto } from '../helpers/job.js';

/** Issue 13, Deliver 4: the words a run leaves, through the real CLI against the HTTP simulator. */

const KEY = 'words-test-key-9c8b7a';
const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function sim(opts: Omit<StartSimOptions, 'keys'>) {
  const s = await startSim({ keys: [KEY], ...opts });
  cleanups.push(() => s.close());
  return s;
}

async function job(photos: number, service: Record<string, unknown> = {}) {
  const j = await makeJob({
    photos,
    steps: [{ capability: 'enhance' }],
    extra: { service: { apiKeyEnv: 'DARKROOM_TEST_KEY', ...service } },
  });
  cleanups.push(j.cleanup);
  return { ...j, env: { DARKROOM_TEST_KEY: KEY, DARKROOM_STATE_DIR: path.join(j.dir, 'key-state') } };
}

const LONG_DIR = 'the family archive scanned in the winter of 2024/box 17 of 40 — letters, postcards and portraits';

describe('after a run with held photos (stderr not a terminal)', () => {
  it('each warning names the photo by its whole input path with its whole request id; the last lines say retry --held and report with the jobs file as typed', async () => {
    // Every create is answered long after the client's 1 s timeout: sent, outcome unknown, held.
    const s = await sim({
      seed: 2,
      latency: { medianMs: 300, sigma: 0.1 },
      faults: { slowAnswer: { probability: 1, delayMs: 4000, createsOnly: true } },
    });
    const j = await job(1, { timeoutMs: 1000 });
    await writePhoto(path.join(j.inputDir, LONG_DIR, 'portrait of great-aunt Margarethe at the harbour, 1953.jpg'), 7);
    const r = await runCli(['run', 'jobs.yaml', '--base-url', s.apiUrl], { ...j.env, COLUMNS: '40' }, { cwd: j.dir, timeoutMs: 60_000 });
    expect(r.code).toBe(1);
    const held = r.stderr.split('\n').filter((l) => l.includes('create held'));
    expect(held.length).toBe(2);
    const long = held.find((l) => l.includes(LONG_DIR));
    expect(long).toBeDefined();
    // Whole, on one line: the path, then the full X-Request-Id darkroom sent (dr-…).
    expect(long).toContain(`${LONG_DIR}/portrait of great-aunt Margarethe at the harbour, 1953.jpg: create held: outcome unknown`);
    expect(long).toMatch(/X-Request-Id dr-[0-9a-z-]{20,}\)$/);
    expect(r.stderr).not.toMatch(/\(item \d+/);
    const next = r.stdout.slice(r.stdout.lastIndexOf('next:'));
    expect(next).toMatch(/^ {2}darkroom retry --held jobs\.yaml +# 2 held/m);
    expect(next).toMatch(/^ {2}darkroom report jobs\.yaml /m);
    expect(next).not.toContain('retry --failed');
  });
});

describe('after a run with failed photos', () => {
  it('the last lines say retry --failed and report, with the jobs file as typed', async () => {
    const s = await sim({ seed: 4, latency: { medianMs: 200, sigma: 0.1 }, outcomes: { error: 1 } });
    const j = await job(2);
    const r = await runCli(['run', './jobs.yaml', '--base-url', s.apiUrl], j.env, { cwd: j.dir, timeoutMs: 60_000 });
    expect(r.code).toBe(1);
    const next = r.stdout.slice(r.stdout.lastIndexOf('next:'));
    expect(next).toMatch(/^ {2}darkroom retry --failed \.\/jobs\.yaml +# 2 failed/m);
    expect(next).toMatch(/^ {2}darkroom report \.\/jobs\.yaml /m);
    expect(next).not.toContain('retry --held');
  });
});

describe('Ctrl-C while the live display draws', () => {
  it('the display is stopped and the cursor shown before the message, and nothing draws over the message', async () => {
    const s = await sim({
      seed: 5,
      latency: { medianMs: 500, sigma: 0.1 },
      faults: { slowAnswer: { probability: 1, delayMs: 60_000, createsOnly: true } },
    });
    const j = await job(3);
    const run = runCli(['run', j.jobsFile, '--base-url', s.apiUrl], { ...j.env, DARKROOM_FORCE_TTY: '1', COLUMNS: '100' });
    await waitForLedger(j.ledgerFile, (l) => createsInFlight(l) > 0);
    // A frame or two on screen first, so there is a display to scramble.
    await new Promise((r) => setTimeout(r, 1200));
    run.child.kill('SIGINT');
    const r = await run;
    expect(r.code).toBe(130);
    const msg = 'darkroom: SIGINT: no new calls';
    const at = r.stderr.indexOf(msg);
    expect(at).toBeGreaterThan(0);
    expect(r.stderr.slice(0, at)).toMatch(/\x1b\[\d+A/); // the display was drawing
    expect(at).toBeGreaterThan(r.stderr.lastIndexOf('\x1b[?25h')); // cursor back before the message
    expect(r.stderr.slice(at)).not.toMatch(/\x1b\[\d*A|\x1b\[\?25l/); // nothing redrawn over it
    expect(r.stderr).toMatch(/interrupted: run `darkroom run \S+jobs\.yaml` again/);
  });
});
