import { spawn } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Ledger } from '../../src/ledger/index.js';
import { startSim } from '../../src/sim/server.js';
import { BIN, runCli, testStateDir } from '../helpers/cli.js';
import { makeJob, makeTempDir } from '../helpers/job.js';

/** Issue 13, Deliver 2: the conventions of a command-line tool, through the real CLI. */

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

const oneLine = (s: string) => s.trim().split('\n').length === 1;

describe('help and version', () => {
  it.each([['-h'], ['--help']])('%s prints the help on stdout and exits 0', async (flag) => {
    const r = await runCli([flag]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^ {2}darkroom run <jobs>/m);
    expect(r.stderr).toBe('');
  });

  it.each([['-v'], ['-V'], ['--version']])('%s prints the version on stdout and exits 0', async (flag) => {
    const r = await runCli([flag]);
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
    expect(r.stderr).toBe('');
  });

  it("each command's help lists its own exit codes only", async () => {
    const run = (await runCli(['run', '--help'])).stdout.replace(/\s+/g, ' ');
    expect(run).toContain('130 interrupted');
    expect(run).toContain('3 stopped by an account problem');
    for (const cmd of ['credits', 'usage']) {
      const text = (await runCli([cmd, '--help'])).stdout.replace(/\s+/g, ' ');
      expect(text).toContain('Exit codes: 0 ');
      expect(text).toContain('3 an account problem');
      expect(text).not.toContain('130 interrupted');
      expect(text).not.toContain('1 finished');
    }
    const status = (await runCli(['status', '--help'])).stdout.replace(/\s+/g, ' ');
    expect(status).not.toContain('130 interrupted');
    expect(status).not.toContain('3 stopped');
  });
});

describe('did you mean', () => {
  it('a mistyped command: exit 2, one line naming it and the closest command', async () => {
    const r = await runCli(['stauts']);
    expect(r.code).toBe(2);
    expect(oneLine(r.stderr)).toBe(true);
    expect(r.stderr).toContain('unknown command "stauts"; did you mean status?');
  });

  it('a mistyped option: exit 2, one line naming it and the closest option of that command', async () => {
    const r = await runCli(['status', '--jsn']);
    expect(r.code).toBe(2);
    expect(oneLine(r.stderr)).toBe(true);
    expect(r.stderr).toContain('unknown option --jsn; did you mean --json?');
    const r2 = await runCli(['run', 'jobs.yaml', '--dryrun']);
    expect(r2.code).toBe(2);
    expect(r2.stderr).toContain('did you mean --dry-run?');
    // A dashed option is named once, not again in yargs' camel case.
    const r3 = await runCli(['run', 'jobs.yaml', '--max-photoz', '3']);
    expect(r3.code).toBe(2);
    expect(r3.stderr.trim()).toBe('darkroom: unknown option --max-photoz; did you mean --max-photos? (see darkroom --help)');
  });
});

describe('darkroom completion', () => {
  it('prints a bash completion script, and a zsh one under zsh', async () => {
    const bash = await runCli(['completion'], { SHELL: '/bin/bash' });
    expect(bash.code).toBe(0);
    expect(bash.stdout).toContain('complete -o bashdefault -o default -F _darkroom_yargs_completions darkroom');
    const zsh = await runCli(['completion'], { SHELL: '/usr/bin/zsh' });
    expect(zsh.code).toBe(0);
    expect(zsh.stdout).toContain('compdef _darkroom_yargs_completions darkroom');
  });

  it("completes the commands from the script's own query", async () => {
    const r = await runCli(['--get-yargs-completions', 'darkroom', 'sta']);
    expect(r.code).toBe(0);
    expect(r.stdout.split('\n')).toContain('status');
  });
});

describe('run --dry-run', () => {
  it('prints what plan prints, exits with its code, and creates nothing (no ledger, no upload, no create)', async () => {
    const key = 'dry-run-key-0a1b2c';
    const sim = await startSim({ keys: [key], seed: 3 });
    cleanups.push(() => sim.close());
    const job = await makeJob({ photos: 3, steps: [{ capability: 'enhance' }] });
    cleanups.push(job.cleanup);
    // Each with a key store of its own: plan's account call would be one more in the other's hour.
    const env = (dir: string) => ({ DARKROOM_TEST_KEY: key, DARKROOM_STATE_DIR: path.join(job.dir, dir) });
    const plan = await runCli(['plan', job.jobsFile, '--base-url', sim.apiUrl], env('plan-state'));
    const dry = await runCli(['run', job.jobsFile, '--base-url', sim.apiUrl, '--dry-run'], env('dry-state'));
    expect(dry.code).toBe(plan.code);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toBe(plan.stdout);
    expect(dry.stdout).toContain('inputs   3 found');
    expect(existsSync(job.ledgerFile)).toBe(false);
    const audit = sim.model.audit();
    expect(Object.keys(audit.createsPerSource)).toHaveLength(0);
    // Two credit checks (one each), nothing else.
    expect(Object.values(audit.keys).reduce((n, k) => n + k.calls, 0)).toBe(2);
  });
});

describe('usage mistakes: exit 2 with one line', () => {
  it.each([
    [['plan', 'JOBS', '--fail-rate', '2'], /--fail-rate: expected a number at least 0 and below 1, got "2"/],
    [['plan', 'JOBS', '--latency', 'abc'], /--latency: expected a number above 0/],
    [['sim', '--fail-rate', '2'], /--fail-rate: expected a number at least 0 and at most 1, got "2"/],
    [['sim', '--port', '99999'], /--port: expected a whole number at least 0 and at most 65535/],
    [['sim', '--keys', ','], /--keys: expected comma-separated API keys/],
    [['plan', 'SAME'], /output\.dir: must not be the same folder as input\.dir/],
    [['run', 'SAME'], /output\.dir: must not be the same folder as input\.dir/],
    [['run', 'MISSING'], /missing\.yaml: file not found/],
    [['status', 'a', 'b'], /unexpected argument "b"/],
    // A guard given without its value is refused, never dropped: it was meant to cap spending.
    [['run', 'JOBS', '--max-photos'], /--max-photos needs a value/],
    [['run', 'JOBS', '--until'], /--until needs a value/],
    [['run'], /darkroom run needs its jobs file/],
    // Without its value --base-url would fall back to the job's URL: perhaps the real service.
    [['run', 'JOBS', '--base-url'], /--base-url needs a value/],
    [['status', 'JOBS', '--ledger'], /--ledger needs a value/],
  ])('%j', async (args, expected) => {
    const job = await makeJob({ photos: 1, steps: [{ capability: 'enhance' }], baseUrl: 'http://127.0.0.1:9' });
    cleanups.push(job.cleanup);
    const same = path.join(job.dir, 'same.yaml');
    writeFileSync(
      same,
      'service: { baseUrl: "http://127.0.0.1:9" }\ninput: { dir: ./photos }\noutput: { dir: ./photos/ }\nsteps: [{ capability: enhance }]\n',
    );
    const argv = args.map((a) =>
      a === 'JOBS' ? job.jobsFile : a === 'SAME' ? same : a === 'MISSING' ? path.join(job.dir, 'missing.yaml') : a,
    );
    const r = await runCli(argv, { DARKROOM_TEST_KEY: 'k-usage', DARKROOM_API_KEY: 'k-usage' }, { timeoutMs: 20_000 });
    expect(r.code).toBe(2);
    expect(oneLine(r.stderr)).toBe(true);
    expect(r.stderr).toMatch(expected);
    expect(r.stderr).not.toContain('unexpected error');
  });
});

describe('a closed pipe', () => {
  it('status --watch | head -1 ends quietly: no stack trace, exit 0', async () => {
    const dir = makeTempDir();
    cleanups.push(() => import('node:fs').then((fs) => fs.rmSync(dir, { recursive: true, force: true })));
    const ledger = path.join(dir, 'darkroom.db');
    Ledger.open(ledger).close();
    // The shell reports darkroom's own exit code on stderr; head's is the pipeline's.
    const script = `("${process.execPath}" "${BIN}" status --ledger "${ledger}" --watch; echo "darkroom exit $?" >&2) | head -1`;
    const child = spawn('sh', ['-c', script], {
      env: { PATH: process.env.PATH ?? '', HOME: dir, DARKROOM_STATE_DIR: testStateDir() },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    clearTimeout(timer);
    expect(code).toBe(0);
    expect(stdout.split('\n').filter(Boolean)).toHaveLength(1);
    expect(stderr).not.toMatch(/EPIPE|Error|\n\s+at /);
    expect(stderr.trim()).toBe('darkroom exit 0');
  });
});
