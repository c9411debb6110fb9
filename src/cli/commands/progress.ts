import type { TtyStream } from '../../progress/live.js';
import { colorWanted } from '../../progress/render.js';
import type { RunIo } from './run.js';

/**
 * How `darkroom run` shows its progress: live rows on a terminal; one summary line a minute
 * on stderr without one or with --quiet. DARKROOM_FORCE_TTY=1 takes the terminal path on
 * any stderr (tests, `script` logs, CI consoles that render ANSI); COLUMNS sets its width.
 */
export function progressFor(stream: NodeJS.WriteStream, env: NodeJS.ProcessEnv, quiet: boolean): NonNullable<RunIo['progress']> {
  const forced = env.DARKROOM_FORCE_TTY === '1';
  if (quiet || !(stream.isTTY || forced)) return { mode: 'lines' };
  const columns = Number(env.COLUMNS) > 0 ? Number(env.COLUMNS) : undefined;
  // A terminal that reports no width (a pty nobody sized, as under `script` without a
  // terminal of its own) is drawn at COLUMNS, else 100 columns.
  const tty: TtyStream =
    stream.isTTY && stream.columns > 0
      ? stream
      : ({
          isTTY: true,
          columns: columns ?? 100,
          write: (s: string, cb?: () => void) => stream.write(s, cb),
        } as TtyStream);
  return { mode: 'tty', stream: tty, color: colorWanted(env, true) };
}
