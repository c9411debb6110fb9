import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';

const ROOT = new URL('../../', import.meta.url);
const pkg = JSON.parse(readFileSync(new URL('package.json', ROOT), 'utf8')) as { version: string };
const COMMANDS = ['run', 'status', 'plan', 'retry', 'report', 'manifest', 'credits', 'usage', 'sim'];

describe('darkroom --help and --version', () => {
  it('--version prints the package version and exits 0', async () => {
    const r = await runCli(['--version']);
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe(pkg.version);
  });

  it('--help lists every command and the exit codes of docs/ARCHITECTURE.md', async () => {
    const r = await runCli(['--help']);
    expect(r.code).toBe(0);
    for (const c of COMMANDS) expect(r.stdout).toMatch(new RegExp(`^  darkroom ${c}\\b`, 'm'));
    const text = r.stdout.replace(/\s+/g, ' ');
    for (const code of [
      '0 every photo done',
      '1 finished, some failed, held or not yet downloaded',
      '2 usage or config error',
      '3 stopped by an account problem',
      '130 interrupted',
    ]) {
      expect(text).toContain(code);
    }
  });

  it.each(COMMANDS)('darkroom %s --help describes it with at least one example', async (cmd) => {
    const r = await runCli([cmd, '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^darkroom ${cmd}\\b`, 'm'));
    expect(r.stdout).toMatch(/^Examples:\n {2}(\S+=\S+ )?darkroom /m);
  });

  it('run --help shows the exit codes too', async () => {
    const r = await runCli(['run', '--help']);
    expect(r.stdout.replace(/\s+/g, ' ')).toContain(
      'Exit codes: 0 every photo done: all that can be done is; inputs darkroom will not send (skipped: unreadable, unsupported, no place for the output) are listed, not counted · 1 finished, some failed, held or not yet downloaded · 2 usage or config error · 3 stopped by an account problem',
    );
    expect(r.stdout).toContain('130 interrupted');
  });

  it('README shows the same exit codes and every command', () => {
    const readme = readFileSync(new URL('README.md', ROOT), 'utf8');
    expect(readme).toMatch(
      /^\| \*\*0\*\* \| every photo done \(inputs darkroom will not send, such as an unreadable file, are listed, not counted\) \|$/m,
    );
    expect(readme).toMatch(/^\| \*\*1\*\* \| finished, some failed, held or not yet downloaded/m);
    expect(readme).toMatch(/^\| \*\*2\*\* \| usage or configuration error/m);
    expect(readme).toMatch(/^\| \*\*3\*\* \| stopped by an account problem/m);
    expect(readme).toMatch(/^\| \*\*4\*\* \| stopped at a limit you set/m);
    expect(readme).toMatch(/^\| \*\*130\*\* \| interrupted \|$/m);
    for (const c of COMMANDS) expect(readme).toMatch(new RegExp(`^\\| .*\`darkroom ${c}\\b`, 'm'));
  });

  it('an unknown command or option is a usage error (exit 2) pointing at --help', async () => {
    const r = await runCli(['sharpen']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/see darkroom --help/);
    const r2 = await runCli(['status', '--nope']);
    expect(r2.code).toBe(2);
  });
});
