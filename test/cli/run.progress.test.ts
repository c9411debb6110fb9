import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSim, type RunningSim } from '../../src/sim/server.js';
import { BIN, runCli, testStateDir, type CliResult } from '../helpers/cli.js';
import { makeJob, type TestJob } from '../helpers/job.js';

const KEY = 'progress-test-key-5b8e1f';
const SGR_COLOUR = /\x1b\[(3\d|1|2)m/;
const CURSOR_UP = /\x1b\[\d+A/;
const HAS_SCRIPT = spawnSync('script', ['--version']).status === 0;

interface Case {
  sim: RunningSim;
  job: TestJob;
  result: CliResult;
}

async function runCase(env: Record<string, string>, steps: unknown[], extraArgs: string[] = []): Promise<Case> {
  const sim = await startSim({ keys: [KEY], seed: 11, latency: { medianMs: 400, sigma: 0.3 } });
  const job = await makeJob({ photos: 3, steps });
  const result = await runCli(
    ['run', job.jobsFile, '--base-url', sim.apiUrl, ...extraArgs],
    { DARKROOM_TEST_KEY: KEY, ...env },
    { timeoutMs: 300_000 },
  );
  return { sim, job, result };
}

/** The CLI under a real pseudo-terminal (util-linux `script`): no forcing, stderr is a TTY. */
async function runUnderScript(steps: unknown[]): Promise<Case & { typescript: string }> {
  const sim = await startSim({ keys: [KEY], seed: 12, latency: { medianMs: 400, sigma: 0.3 } });
  const job = await makeJob({ photos: 3, steps });
  const typescript = path.join(job.dir, 'typescript.txt');
  const cmd = `${process.execPath} ${BIN} run '${job.jobsFile}' --base-url ${sim.apiUrl}`;
  const child = spawn('script', ['-qfec', cmd, typescript], {
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '/tmp',
      DARKROOM_TEST_KEY: KEY,
      COLUMNS: '120',
      TERM: 'xterm',
      DARKROOM_STATE_DIR: testStateDir(),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 300_000);
  const result = await new Promise<CliResult>((resolve) =>
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    }),
  );
  return { sim, job, result, typescript: readFileSync(typescript, 'utf8') };
}

describe('darkroom run: the live progress display', () => {
  let forced: Case;
  let noColor: Case;
  let quiet: Case;
  let pty: (Case & { typescript: string }) | undefined;

  beforeAll(async () => {
    [forced, noColor, quiet, pty] = await Promise.all([
      runCase({ DARKROOM_FORCE_TTY: '1', COLUMNS: '140' }, [{ capability: 'restore' }, { capability: 'upscale', resolution: '4K' }]),
      runCase({ DARKROOM_FORCE_TTY: '1', NO_COLOR: '1' }, [{ capability: 'enhance' }]),
      runCase({ DARKROOM_FORCE_TTY: '1' }, [{ capability: 'enhance' }], ['--quiet']),
      HAS_SCRIPT ? runUnderScript([{ capability: 'enhance' }]) : Promise.resolve(undefined),
    ]);
  }, 320_000);

  afterAll(async () => {
    for (const c of [forced, noColor, quiet, pty]) {
      await c?.sim.close();
      c?.job.cleanup();
    }
  });

  it('draws rows in place on a (forced) terminal: per step, per key, rate, ETA, problems', () => {
    const { result } = forced;
    expect(result.code).toBe(0);
    const err = result.stderr;
    expect(err).toContain('\x1b[?25l');
    expect(err).toContain('\x1b[?25h');
    expect(err).toMatch(CURSOR_UP);
    expect(err).toMatch(/step 1 restore +\S*[█░]+\S* \d\/3/);
    expect(err).toMatch(/step 2 upscale +\S*[█░]+\S* \d\/3/);
    expect(err).toMatch(/key +k_[0-9a-f]{12}: tasks [0-3]\/3 · calls \d+\/100 this minute · \d+\/1000 this hour/);
    expect(err).toMatch(/rate +[\d.]+ photos\/min · [\d.]+ calls\/min/);
    expect(err).toMatch(/eta +(ETA \S+( \d+s)? \((task slots|minute window|hour window) binds|nothing left|\d result\(s\) downloading)/);
    expect(err).toMatch(/problems +none/);
    expect(err).toMatch(SGR_COLOUR);
    // It moved while we watched: more than one picture of the counts was drawn, ending at 3/3.
    const counts = new Set([...err.matchAll(/(\d)\/3 photos done/g)].map((m) => m[1]));
    expect(counts.size).toBeGreaterThan(1);
    expect(counts.has('3')).toBe(true);
    // Tasks in use never passed the limit.
    for (const m of err.matchAll(/tasks (\d+)\/3/g)) expect(Number(m[1])).toBeLessThanOrEqual(3);
    // stdout is the final report, untouched by the display.
    expect(result.stdout).toMatch(/3 total · 3 done · 0 failed · 0 held · 0 pending/);
    expect(result.stdout).not.toMatch(/\x1b/);
  });

  it('draws without colour under NO_COLOR, still in place', () => {
    const { result } = noColor;
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(CURSOR_UP);
    expect(result.stderr).toMatch(/step 1 enhance/);
    expect(result.stderr).not.toMatch(SGR_COLOUR);
  });

  it('--quiet draws nothing in place, even on a terminal: at most a summary line a minute', () => {
    const { result } = quiet;
    expect(result.code).toBe(0);
    expect(result.stderr).not.toMatch(/\x1b/);
    for (const line of result.stderr.trim().split('\n').filter(Boolean)) {
      expect(line).toMatch(/^darkroom: \d+\/3 done · tasks \d+ · calls \d+\/min \d+\/h · .* elapsed \d+m \d\ds$/);
    }
  });

  it.skipIf(!HAS_SCRIPT)('takes the terminal path by itself under a real pseudo-terminal (script)', () => {
    const c = pty!;
    expect(c.result.code).toBe(0);
    expect(c.typescript).toMatch(CURSOR_UP);
    expect(c.typescript).toMatch(/step 1 enhance/);
    expect(c.typescript).toMatch(/3\/3 photos done/);
    expect(c.typescript).toMatch(/3 total · 3 done · 0 failed · 0 held · 0 pending/);
  });
});

describe('darkroom run interrupted while drawing', () => {
  it('a second Ctrl-C exits 130 at once and gives the terminal its cursor back', async () => {
    // Every answer held 30 s: calls are in flight when the interrupts come.
    const sim = await startSim({ keys: [KEY], seed: 13, faults: { slowAnswer: { probability: 1, delayMs: 30_000 } } });
    const job = await makeJob({ photos: 4, steps: [{ capability: 'enhance' }] });
    try {
      const p = runCli(
        ['run', job.jobsFile, '--base-url', sim.apiUrl],
        { DARKROOM_TEST_KEY: KEY, DARKROOM_FORCE_TTY: '1' },
        { timeoutMs: 60_000 },
      );
      let err = '';
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, 20_000);
        p.child.stderr!.on('data', (d: Buffer) => {
          err += d.toString();
          if (/step 1 enhance/.test(err)) {
            clearTimeout(t);
            resolve();
          }
        });
      });
      p.child.kill('SIGINT');
      await new Promise((r) => setTimeout(r, 100));
      p.child.kill('SIGINT');
      const r = await p;
      expect(r.code).toBe(130);
      expect(r.stderr).toMatch(/second interrupt, exiting now/);
      expect(r.stderr).toContain('\x1b[?25l');
      const lastHide = r.stderr.lastIndexOf('\x1b[?25l');
      expect(r.stderr.lastIndexOf('\x1b[?25h')).toBeGreaterThan(lastHide);
      expect(r.stderr.lastIndexOf('\x1b[?7h')).toBeGreaterThan(r.stderr.lastIndexOf('\x1b[?7l'));
    } finally {
      await sim.close();
      job.cleanup();
    }
  }, 120_000);
});

describe('darkroom run without a terminal', () => {
  it('writes no escape codes and no rows: the banner, and a summary line a minute at most', async () => {
    const c = await runCase({}, [{ capability: 'enhance' }]);
    try {
      expect(c.result.code).toBe(0);
      expect(c.result.stderr).not.toMatch(/\x1b/);
      const lines = c.result.stderr.trim().split('\n');
      expect(lines[0]).toMatch(/^darkroom: running .* with 1 key\(s\); ledger /);
      for (const line of lines.slice(1)) expect(line).toMatch(/^darkroom: \d+\/3 done · /);
    } finally {
      await c.sim.close();
      c.job.cleanup();
    }
  }, 320_000);
});
