import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSim, type RunningSim } from '../../src/sim/server.js';
import { runCli } from '../helpers/cli.js';
import { makeJob, type TestJob } from '../helpers/job.js';

const KEY = 'e2e-disk-key-5c1d';

/**
 * Issue 12, point 2, at the command line: an output folder that cannot take files is found
 * before any call, with one line and exit 2. /sys/kernel exists and nobody can create a
 * file in it, root included (mode bits say otherwise to root: the check must really write),
 * so this holds whoever runs the tests. Nor can anyone make a folder in /proc.
 */
describe('darkroom run with an output folder it cannot write', () => {
  let sim: RunningSim;
  const jobs: TestJob[] = [];

  beforeAll(async () => {
    sim = await startSim({ keys: [KEY], seed: 5, latency: { medianMs: 200, sigma: 0.3 } });
  });

  afterAll(async () => {
    await sim?.close();
    for (const j of jobs) j.cleanup();
  });

  it.each([
    [
      'an existing read-only folder',
      '/sys/kernel',
      /^stopped: cannot write a file in the output folder \/sys\/kernel: permission denied \(EACCES\); set output\.dir to a folder you can write/m,
    ],
    [
      'a folder that cannot be made',
      '/sys/kernel/darkroom-out',
      /^stopped: cannot create the output folder \/sys\/kernel\/darkroom-out: (operation not permitted \(EPERM\)|permission denied \(EACCES\)|no such file or directory|.*\(ENOENT\)); set output\.dir/m,
    ],
    // Node's own recursive mkdir loops for ever under procfs, deaf to SIGINT (src/fsdirs.ts).
    [
      'a folder under procfs',
      '/proc/darkroom-out/sub',
      /^stopped: cannot create the output folder \/proc\/darkroom-out\/sub: no such file or folder \(ENOENT\); set output\.dir/m,
    ],
  ])('%s: stopped before any call, exit 2, one line', async (_what, dir, line) => {
    const job = await makeJob({ photos: 4, steps: [{ capability: 'enhance' }], extra: { output: { dir } } });
    jobs.push(job);
    const before = Object.values(sim.model.audit().keys).reduce((n, k) => n + k.calls, 0);
    const r = await runCli(['run', job.jobsFile, '--base-url', sim.apiUrl, '--quiet'], { DARKROOM_TEST_KEY: KEY });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(line);
    expect(r.stderr.split('\n').filter((l) => l.startsWith('stopped:'))).toHaveLength(1);
    expect(r.stdout).not.toMatch(/^stopped:/m);
    expect(r.stderr).not.toMatch(/unexpected error|at .*\.js:\d+/);
    // Not one call reached the service: no upload, no create, nothing charged.
    const after = sim.model.audit();
    expect(Object.values(after.keys).reduce((n, k) => n + k.calls, 0)).toBe(before);
    expect(after.tasks).toBe(0);
  });
});
