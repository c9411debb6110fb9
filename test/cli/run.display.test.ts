import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fingerprintKey } from '../../src/spec/key.js';
import { startSim, type RunningSim } from '../../src/sim/server.js';
import { makeJob, type TestJob } from '../helpers/job.js';
import { runInTerminal, screenOf } from '../helpers/terminal.js';

/**
 * The live display in a pseudo-terminal at 80 and 110 columns, through an outage: its
 * warnings (wrapped at 80) go above the rows, the rows below are redrawn whole, and a row
 * that comes and goes (the outage's) leaves nothing behind.
 */

const KEY = 'display-test-key-3c9d0e';
const ROWS = ['step 1 ', 'key ', 'rate ', 'eta ', 'problems '];

describe('the live display through an outage', () => {
  const cases: { columns: number; sim: RunningSim; job: TestJob; code: number | null; screen: string[] }[] = [];

  beforeAll(async () => {
    await Promise.all(
      [80, 110].map(async (columns) => {
        // 1.5 s tasks: every create is in before the outage, and only polls meet it.
        const sim = await startSim({
          keys: [KEY],
          seed: 7,
          latency: { medianMs: 1500, sigma: 0.1 },
          outcomes: { fail: 0, error: 0, other: 0 },
        });
        const job = await makeJob({ photos: 3, steps: [{ capability: 'enhance' }] });
        const run = runInTerminal(['run', job.jobsFile, '--base-url', sim.apiUrl], { DARKROOM_TEST_KEY: KEY }, columns);
        while ((sim.model.audit().keys[fingerprintKey(KEY)]?.creates ?? 0) < 3) await new Promise((r) => setTimeout(r, 50));
        await sim.suspendApi();
        await new Promise((r) => setTimeout(r, 4000));
        await sim.resumeApi();
        const r = await run;
        cases.push({ columns, sim, job, code: r.code, screen: await screenOf(r.raw, columns) });
      }),
    );
  }, 90_000);

  afterAll(async () => {
    for (const c of cases) {
      await c.sim.close();
      c.job.cleanup();
    }
  });

  it.each([80, 110])('at %i columns: warnings whole above the rows, every row once, nothing left of a bar or of a row gone', (columns) => {
    const { code, screen } = cases.find((c) => c.columns === columns)!;
    expect(code).toBe(0);
    const text = screen.join(' ');
    expect(text).toMatch(/darkroom: warning: service unreachable since \d\d:\d\d:\d\d \(NOT_SENT\); waiting it out, next try in \d+ s/);
    expect(text).toMatch(/darkroom: warning: the service answers again \(unreachable for \d+ s\)/);
    // The last frame: each row once, in order, under the warnings; the outage's row is gone.
    const at = ROWS.map((label) => screen.filter((l) => l.startsWith(label)));
    for (const [i, found] of at.entries()) expect(found, ROWS[i]).toHaveLength(1);
    const lines = ROWS.map((label) => screen.findIndex((l) => l.startsWith(label)));
    expect(lines).toEqual([...lines].sort((a, b) => a - b));
    expect(screen.findIndex((l) => l.startsWith('darkroom: warning: the service answers again'))).toBeLessThan(lines[0]!);
    expect(screen.filter((l) => l.startsWith('service '))).toEqual([]);
    expect(screen.find((l) => l.startsWith('eta '))).toMatch(/nothing left/);
    // A bar is drawn only in its own row: none glued to a warning's last word.
    for (const l of screen) if (/[█░]/.test(l)) expect(l).toMatch(/^step 1 /);
    for (const l of screen) expect(l.length).toBeLessThanOrEqual(columns);
  });
});
