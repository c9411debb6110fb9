import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { DefaultExifToolOptions, ExifTool, ExifToolTask, exiftool as defaultExifTool } from 'exiftool-vendored';
import { clock } from '../clock.js';
import { ExifToolCrashed, ExifToolError, ExifToolUnavailable } from '../errors.js';

/**
 * exiftool-vendored makes a default ExifTool of its own when it is loaded, and that one
 * hooks the host process's 'exit' and 'beforeExit' events. darkroom uses its own (below),
 * so the default is ended at once: it never started a process, and ending it takes its
 * hooks off again (a program using darkroom keeps its process's listeners as they were).
 */
const defaultEnded = defaultExifTool.end();

/**
 * ExifTool, the archive world's metadata tool, through exiftool-vendored: one long-lived
 * `exiftool -stay_open` process (two on a machine with two cores or more) that takes one
 * command at a time, so a file costs a few milliseconds instead of perl's start-up.
 *
 * ExifTool is a perl program on Linux and macOS. exiftool-vendored looks for perl only at
 * /usr/bin/perl and starts it with an empty PATH; darkroom finds perl on the PATH it was
 * given, as a shell would, so that "no perl" is said before any upload, in one line, and a
 * test can show it by handing over a PATH without perl.
 */

/** What one command printed; warnings are ExifTool's own lines ("Warning: …"). */
export interface ExifToolOutput {
  readonly stdout: string;
  readonly warnings: readonly string[];
}

/** One ExifTool command, its arguments passed as they are; an "Error:" line makes it fail. */
class ArgsTask extends ExifToolTask<ExifToolOutput> {
  protected parse(stdout: string, err?: Error): ExifToolOutput {
    if (err) throw new ExifToolError(err.message);
    return { stdout, warnings: [...this.warnings] };
  }
}

export interface ExifToolOptions {
  /** The environment whose PATH perl is looked for on; the process's by default. */
  readonly env?: NodeJS.ProcessEnv | undefined;
  /** ExifTool processes at once; default 2 (1 on a single core). */
  readonly maxProcs?: number | undefined;
}

const INSTALL_PERL = 'install perl (it ships with macOS; on Debian or Ubuntu: apt install perl)';

/**
 * ExifTool in `-stay_open` mode never ends by itself: at the end of its input it sleeps
 * and reads again, 100 times a second, for ever. A darkroom that is killed (kill -9, an OOM
 * kill, a power cut of the terminal) cannot end it, and every kill would leave two perl
 * processes behind. So ExifTool is started through this perl: it forks a watcher that
 * checks once a second whether darkroom is still alive and, if not, kills ExifTool, then
 * becomes ExifTool itself (exec, same process, same pipes). The watcher ends with ExifTool.
 */
const WATCHDOG = [
  'my $parent = getppid(); my $me = $$;',
  'my $w = fork();',
  'if (defined $w && $w == 0) { close STDIN; close STDOUT; close STDERR;',
  '  while (1) { sleep 1; exit 0 if getppid() != $me; if (!kill(0, $parent)) { kill("KILL", $me); exit 0; } } }',
  'exec($^X, @ARGV) or die "cannot start ExifTool: $!\\n";',
].join(' ');

/**
 * A command that does not finish in this time is ended and its process started again: a
 * multi-gigabyte TIFF master is read in well under a minute, so this is a hung process.
 */
const TASK_TIMEOUT_MS = 120_000;

export class ExifToolProcess {
  private readonly et: ExifTool;
  private readonly perl: string | null;

  constructor(opts: ExifToolOptions = {}) {
    const env = opts.env ?? process.env;
    const windows = process.platform === 'win32';
    this.perl = windows ? null : findOnPath('perl', env.PATH ?? '');
    const maxProcs = opts.maxProcs ?? Math.max(1, Math.min(2, availableParallelism()));
    this.et = new ExifTool({
      maxProcs,
      taskTimeoutMillis: TASK_TIMEOUT_MS,
      // darkroom ends its ExifTool itself (end()); a library adds no exit hooks to its host process.
      cleanupChildProcsOnExit: false,
      checkPerl: false,
      // A failed command is not repeated: a write with -o would then meet its own half-made file.
      taskRetries: 0,
      ...(windows
        ? {}
        : {
            processFactory: async () => {
              if (this.perl === null) throw new ExifToolUnavailable('ExifTool needs perl, and there is no perl on PATH', INSTALL_PERL);
              const script = await this.et.exiftoolPath();
              return spawn(this.perl, ['-e', WATCHDOG, script, ...DefaultExifToolOptions.exiftoolArgs], {
                stdio: 'pipe',
                shell: false,
                detached: false,
                env: { PATH: env.PATH ?? '', LANG: 'C' },
              });
            },
          }),
    });
  }

  /** Start ExifTool and ask its version: throws ExifToolUnavailable when it cannot run. */
  async start(): Promise<string> {
    await clock.io(defaultEnded);
    if (this.perl === null && process.platform !== 'win32')
      throw new ExifToolUnavailable('ExifTool needs perl, and there is no perl on PATH', INSTALL_PERL);
    try {
      return await clock.io(this.et.version());
    } catch (err) {
      throw new ExifToolUnavailable(`ExifTool did not start (${firstLine(err)})`, `${INSTALL_PERL} or repair it`);
    }
  }

  /**
   * One command. Arguments are passed as they are (one a line on ExifTool's stdin): none may
   * hold a line break. Rejects with ExifToolError when ExifTool refused the command, and
   * ExifToolCrashed when its process did not answer (a new one is started for the next).
   */
  async run(args: readonly string[]): Promise<ExifToolOutput> {
    try {
      return await clock.io(this.et.enqueueTask(() => new ArgsTask(['-charset', 'filename=utf8', ...args]), false));
    } catch (err) {
      if (err instanceof ExifToolError) throw err;
      throw new ExifToolCrashed(`ExifTool did not answer (${firstLine(err).slice(0, 120)})`, { cause: err });
    }
  }

  end(): Promise<void> {
    return clock.io(this.et.end());
  }
}

/** Why ExifTool could not run with this environment (no perl on its PATH), or null; without starting it. */
export function exifToolProblem(env: NodeJS.ProcessEnv): string | null {
  if (process.platform === 'win32') return null;
  return findOnPath('perl', env.PATH ?? '') === null ? 'ExifTool needs perl, and there is no perl on PATH' : null;
}

function findOnPath(name: string, pathList: string): string | null {
  for (const dir of pathList.split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return null;
}

export function firstLine(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return (text.split('\n').find((l) => l.trim() !== '') ?? text).trim();
}
