import { spawn, spawnSync } from 'node:child_process';
import { Terminal } from '@xterm/headless';
import { BIN, testStateDir } from './cli.js';

/** util-linux `script`: a real pseudo-terminal. Without it, the CLI's own DARKROOM_FORCE_TTY sends the same bytes through a pipe. */
const HAS_SCRIPT = spawnSync('script', ['--version']).status === 0;
const ROWS = 40;

export interface TerminalRun {
  readonly code: number | null;
  /** Every byte the terminal was sent, escape sequences and all. */
  readonly raw: string;
  /** Through a real pseudo-terminal (`script`), or the forced path. */
  readonly pty: boolean;
}

const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/**
 * The real CLI in a pseudo-terminal `columns` wide and 40 rows high (util-linux `script`, the
 * terminal sized with `stty` before the CLI starts, so Node reads its width as from any
 * terminal), with only the environment given and this file's DARKROOM_STATE_DIR unless `env`
 * names one. `interruptAfterMs`: Ctrl-C then, as an operator would (SIGINT to its process
 * group). Read what it drew with `screenOf`.
 */
export function runInTerminal(
  args: readonly string[],
  env: Record<string, string>,
  columns: number,
  opts: { readonly interruptAfterMs?: number; readonly timeoutMs?: number } = {},
): Promise<TerminalRun> {
  const base = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/tmp',
    TERM: 'xterm',
    DARKROOM_STATE_DIR: testStateDir(),
    ...env,
  };
  const cli = [process.execPath, BIN, ...args].map(quote).join(' ');
  // A process group of its own, so a Ctrl-C reaches the CLI as a terminal's would.
  const child = HAS_SCRIPT
    ? spawn('script', ['-qfec', `stty cols ${columns} rows ${ROWS}; exec ${cli}`, '/dev/null'], {
        env: base,
        stdio: ['pipe', 'pipe', 'pipe'],
        detached: true,
      })
    : spawn(process.execPath, [BIN, ...args], {
        env: { ...base, DARKROOM_FORCE_TTY: '1', COLUMNS: String(columns) },
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      });
  let raw = '';
  child.stdout.on('data', (d: Buffer) => (raw += d.toString()));
  child.stderr.on('data', (d: Buffer) => (raw += d.toString()));
  const group = (signal: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, signal);
    } catch {
      // already ended
    }
  };
  const timer = setTimeout(() => group('SIGKILL'), opts.timeoutMs ?? 120_000);
  // Ctrl-C typed at the terminal: its line discipline signals the CLI (the pipe's fallback: SIGINT to it).
  const ctrlC = () => (HAS_SCRIPT ? child.stdin!.write('\x03') : group('SIGINT'));
  const interrupt = opts.interruptAfterMs === undefined ? undefined : setTimeout(ctrlC, opts.interruptAfterMs);
  return new Promise((resolve) =>
    child.on('close', (code) => {
      clearTimeout(timer);
      if (interrupt) clearTimeout(interrupt);
      resolve({ code, raw, pty: HAS_SCRIPT });
    }),
  );
}

/**
 * What a terminal `columns` wide shows after `raw` (xterm.js's own emulator, headless): every
 * line of the scrollback and the screen, top to bottom, trailing blanks trimmed.
 */
export async function screenOf(raw: string, columns: number): Promise<string[]> {
  const term = new Terminal({ cols: columns, rows: ROWS, scrollback: 5000, allowProposedApi: true, convertEol: true });
  await new Promise<void>((resolve) => term.write(raw, resolve));
  const buf = term.buffer.active;
  const lines: string[] = [];
  for (let i = 0; i < buf.length; i++) lines.push(buf.getLine(i)?.translateToString(true) ?? '');
  while (lines.length > 0 && lines.at(-1) === '') lines.pop();
  term.dispose();
  return lines;
}
