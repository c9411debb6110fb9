import { afterAll, describe, expect, it } from 'vitest';
import { Ledger } from '../../src/ledger/index.js';
import { startSim } from '../../src/sim/server.js';
import { discovered } from '../helpers/discovered.js';
import { runCli } from '../helpers/cli.js';
import { makeJob, type TestJob } from '../helpers/job.js';

/** The small things a first evening meets: each through the real CLI. */
describe('a first evening', () => {
  const jobs: TestJob[] = [];
  afterAll(() => jobs.forEach((j) => j.cleanup()));

  it("`status` with no argument in a job's folder finds the job that ran there", async () => {
    const job = await makeJob({ photos: 1 });
    jobs.push(job);
    const ledger = Ledger.open(job.ledgerFile);
    discovered(ledger, ['photo.jpg']);
    ledger.close();
    const r = await runCli(['status'], {}, { cwd: job.dir });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`ledger   ${job.ledgerFile}`);
    expect(r.stdout).toMatch(/photos +1 total/);
  });

  it('an invalid key is said once a line: the HTTP status, code and requestId not repeated', async () => {
    const sim = await startSim({ keys: ['the-right-key-123'], seed: 2 });
    const job = await makeJob({ photos: 2, steps: [{ capability: 'enhance' }] });
    jobs.push(job);
    try {
      const r = await runCli(['run', job.jobsFile, '--base-url', sim.apiUrl], { DARKROOM_TEST_KEY: 'a-wrong-key-456' });
      expect(r.code).toBe(3);
      const lines = r.stderr.split('\n').filter((l) => l.includes('HTTP 401'));
      expect(lines.length).toBeGreaterThan(0);
      for (const l of lines) expect(l.match(/HTTP 401/g), l).toHaveLength(1);
    } finally {
      await sim.close();
    }
  });

  it.each(['run', 'status', 'plan', 'retry', 'report', 'manifest', 'credits', 'usage', 'sim'])(
    '%s --help lists --version once, with both its short names',
    async (command) => {
      const r = await runCli([command, '--help']);
      expect(r.stdout.split('\n').filter((l) => l.includes('--version'))).toEqual([expect.stringMatching(/^ +-v, -V, --version /)]);
    },
  );

  it('completion --help says what completion does, and prints no script', async () => {
    const r = await runCli(['completion', '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^darkroom completion\n\nprint a shell completion script/);
    expect(r.stdout).not.toMatch(/begin-darkroom-completions/);
  });
});
