import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll } from 'vitest';

export const BIN = fileURLToPath(new URL('../../bin/darkroom.js', import.meta.url));

export interface CliResult {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

let stateDir: string | undefined;
const removeStateDir = () => {
  if (stateDir !== undefined) rmSync(stateDir, { recursive: true, force: true });
  stateDir = undefined;
};
// Removed after the test file that imported this (vitest evaluates it once per file);
// outside vitest (the crash test's own runner) when the process exits.
let underVitest = true;
try {
  afterAll(removeStateDir);
} catch {
  underVitest = false;
}

/**
 * The key stores' folder (DARKROOM_STATE_DIR) of the CLI runs of this test file: one per
 * file (each file has its own module instance), so test files running side by side never
 * share a key's budget by accident, nor the user's own ~/.local/state/darkroom.
 */
export function testStateDir(): string {
  if (stateDir === undefined) {
    stateDir = mkdtempSync(path.join(tmpdir(), 'darkroom-state-'));
    if (!underVitest) process.once('exit', removeStateDir);
  }
  return stateDir;
}

/**
 * The real CLI as a child process (built by `npm test`'s pretest), with only the
 * environment given, and this file's DARKROOM_STATE_DIR unless `env` names one.
 */
export function runCli(
  args: string[],
  env: Record<string, string> = {},
  opts: { cwd?: string; timeoutMs?: number } = {},
): Promise<CliResult> & { child: ReturnType<typeof spawn> } {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: opts.cwd,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', DARKROOM_STATE_DIR: testStateDir(), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 120_000);
  const p = new Promise<CliResult>((resolve) => {
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  }) as Promise<CliResult> & { child: ReturnType<typeof spawn> };
  p.child = child;
  return p;
}

/**
 * The real CLI on a pseudo-terminal (util-linux `script`), `answer` typed at its `[y/N]`
 * question: what an operator at a terminal sees and answers. `env` is added to a bare
 * PATH, HOME and TERM.
 */
export function runOnTty(
  args: readonly string[],
  answer: string,
  env: Readonly<Record<string, string>> = {},
): Promise<{ code: number | null; output: string }> {
  const cmd = [process.execPath, BIN, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
  const child = spawn('script', ['-q', '-e', '-c', cmd, '/dev/null'], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', TERM: 'dumb', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d: Buffer) => {
    output += d.toString();
    if (output.includes('[y/N]') && !child.stdin.writableEnded) child.stdin.end(`${answer}\n`);
  });
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, output })));
}
