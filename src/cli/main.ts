/*
 * The CLI's surface read top to bottom: `main`, then one small function per command (its
 * usage, options, help and exit codes beside the handler that calls its function). The
 * commands' work is in cli/commands/.
 */
import { readFileSync } from 'node:fs';
import yargs, { type Argv } from 'yargs';
import { clock } from '../clock.js';
import { DEFAULT_LEDGER_FILE, PHOTOS_PER_PAGE } from './commands/index.js';
import { jsonSafe, terminalSafe } from '../display.js';
import { askOnTerminal } from './ask.js';
import { EXIT, UsageError } from '../errors.js';
import { describeError } from './errors.js';
import { withGuardOptions } from './guardOptions.js';
import { allExitCodesEpilog, exitCodesEpilog } from './exitCodes.js';
import { Screen } from './screen.js';
import { usageLine } from './suggest.js';
import { numberOption, optionalNumberOption } from './usage.js';

// Each command's module is loaded by its handler when it runs (`await import('./commands/…')`):
// together they load undici, sharp, zod, yaml, pino, fast-glob… (0.4–0.6 s here, of a `status`
// on 100,000 items that took 0.7–1.0 s), and `status`, `--help` and `--version` need none of that.

const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

const KEY_NOTE = 'The API key is read only from the environment variable the job names (service.apiKeyEnv).';
const EPILOG = `${allExitCodesEpilog()}\n${KEY_NOTE}`;

const BREAK_LOCK =
  'HOST:PID — take over the ledger lock of a run on another host (or container) that you know is gone; darkroom names it when it refuses';

/** Text on stdout: nothing in it acts on the terminal (terminalSafe: names and messages come from outside). */
const out = (text: string) => {
  const s = terminalSafe(text);
  process.stdout.write(s.endsWith('\n') ? s : `${s}\n`);
};
/** JSON on stdout: exact JSON, with the characters JSON.stringify leaves raw that a terminal would act on escaped (jsonSafe). */
const outJson = (json: string) => process.stdout.write(`${jsonSafe(json)}\n`);
// stderr: through the live display while one draws (screen.ts), so nothing tears it.
const screen = new Screen(process.stderr);
const err = screen.line;

/** The entry point: the only place that prints results and chooses the exit code. */
/** What `completion` does, said by `completion --help` (yargs would print the script itself). */
const COMPLETION_HELP = 'print a shell completion script (bash; zsh when $SHELL is zsh): darkroom completion >> ~/.bashrc';

export async function main(argv: string[]): Promise<number> {
  if (argv[0] === 'completion' && argv.some((a) => a === '--help' || a === '-h')) {
    out(`darkroom completion\n\n${COMPLETION_HELP}\n\n${exitCodesEpilog('completion')}`);
    return EXIT.ok;
  }
  let exitCode: number = EXIT.ok;
  // Whatever ends the process (an exit in a handler, a second Ctrl-C) leaves the terminal whole.
  process.once('exit', screen.release);
  let parser = yargs(argv)
    .scriptName('darkroom')
    .usage('darkroom <command> [options]\n\nRun folders of photos through a remote AI image service, durably and within its limits.');
  for (const command of COMMANDS) parser = command(parser, (code) => (exitCode = code));
  parser = parser
    .completion('completion', COMPLETION_HELP)
    .demandCommand(1, 'name a command: run, status, plan, retry, review, report, manifest, credits, usage or sim')
    .recommendCommands()
    .strict()
    .epilog(EPILOG)
    .version(VERSION)
    // One option with both short names, listed once in every --help (-v, -V, --version).
    .alias('version', ['v', 'V'])
    .help()
    .alias('h', 'help')
    .wrap(Math.min(100, process.stdout.columns ?? 100))
    .fail((msg, e, usage) => {
      // yargs' own errors (YError: an option's coerce refused its value) are usage mistakes.
      if (e?.name === 'YError') throw new UsageError(usageLine(e.message, argv, []));
      if (e) throw e;
      // The options of the command being parsed (yargs passes its usage object here).
      const options = Object.keys((usage as unknown as { getDescriptions?: () => Record<string, unknown> }).getDescriptions?.() ?? {});
      throw new UsageError(usageLine(msg, argv, options));
    });
  try {
    await parser.parseAsync();
  } catch (e) {
    const d = describeError(e);
    err(d.line);
    return d.exitCode;
  }
  return exitCode;
}

const PORT = { min: 0, max: 65535, integer: true } as const;

/** `darkroom plan`, and `darkroom run --dry-run`: the same checks, the same output, no call that costs. */
async function plan(a: {
  jobs: string;
  ledger?: string | undefined;
  baseUrl?: string | undefined;
  cost?: (string | number)[] | undefined;
  latencyS?: number | undefined;
  failRate?: number | undefined;
  json?: boolean | undefined;
}): Promise<number> {
  const r = await (
    await import('./commands/plan.js')
  ).planCommand(
    {
      jobs: a.jobs,
      ledger: a.ledger,
      baseUrl: a.baseUrl,
      cost: a.cost,
      latencyS: a.latencyS,
      failRate: a.failRate ?? 0,
      json: a.json ?? false,
    },
    { env: process.env, onWait: err },
  );
  (a.json ? outJson : out)(r.text);
  return r.exitCode;
}

/** What a command's handler says of how the process exits (the commands that return an exit code). */
type Done = (exitCode: number) => void;

/** Each command: its usage, options, help and exit codes beside the handler that calls its function in cli/commands/. */
const COMMANDS: readonly ((y: Argv, done: Done) => Argv)[] = [
  runCli,
  statusCli,
  retryCli,
  reviewCli,
  planCli,
  creditsCli,
  usageCli,
  reportCli,
  manifestCli,
  simCli,
];

/** `darkroom run <jobs>`: the job to its end; SIGINT/SIGTERM stop it within 5 s, the ledger consistent. */
function runCli(y: Argv, done: Done): Argv {
  return y.command(
    'run <jobs>',
    "discover the job's photos and take each through upload → create → poll → download",
    (y) =>
      withGuardOptions(y)
        .positional('jobs', { type: 'string', demandOption: true, describe: 'the jobs YAML file' })
        .option('ledger', { type: 'string', requiresArg: true, describe: "ledger file (default: the YAML's `ledger`)" })
        .option('base-url', {
          type: 'string',
          requiresArg: true,
          describe: 'service base URL (wins over DARKROOM_BASE_URL and service.baseUrl)',
        })
        .option('quiet', {
          type: 'boolean',
          default: false,
          describe: 'no live display: one summary line a minute on stderr (as without a terminal)',
        })
        .option('break-lock', { type: 'string', requiresArg: true, describe: BREAK_LOCK })
        .option('redo-steps', {
          type: 'boolean',
          default: false,
          describe: "the job's steps changed: redo the photos started under the old steps from the first step (each is paid again)",
        })
        .option('follow', {
          type: 'boolean',
          default: false,
          describe:
            'after the photos already there, keep watching input.dir (and the URL list) and take each new photo once it is whole (input.settle), until Ctrl-C, --until, --max-duration, --max-photos or --max-credits',
        })
        .option('dry-run', {
          type: 'boolean',
          default: false,
          describe: 'do not run: print what `darkroom plan` prints (photos, calls, credits, time) and exit with its code',
        })
        .example('DARKROOM_API_KEY=… darkroom run jobs.yaml', 'run a job; run it again to resume')
        .example('darkroom run jobs.yaml --follow', "a scanning station's day: new scans taken as they arrive, until Ctrl-C")
        .example('darkroom run jobs.yaml --dry-run', 'the same as darkroom plan jobs.yaml: nothing is created')
        .epilog(`${exitCodesEpilog('run')}\n${KEY_NOTE}`),
    async (a) => {
      if (a['dry-run']) {
        done(await plan({ jobs: a.jobs, ledger: a.ledger, baseUrl: a['base-url'] }));
        return;
      }
      // First SIGINT/SIGTERM: no new calls; calls in flight get the runner's grace period
      // (2 s) and are then aborted, each outcome recorded. A backstop exits at 4.5 s
      // whatever is still pending, so an interrupt always ends the process within 5 s.
      // Second signal: exit at once. Either way the ledger is consistent — SQLite commits
      // are atomic and a signal handler never runs inside one — and the next run recovers.
      const ac = new AbortController();
      let interrupts = 0;
      let backstop: ReturnType<typeof clock.setTimer> | undefined;
      const onSignal = (sig: NodeJS.Signals) => {
        interrupts++;
        // The live display is stopped first (last frame kept, cursor back), so the
        // message is printed below it and stays on screen.
        if (interrupts > 1) {
          screen.stopThenLine('darkroom: second interrupt, exiting now; the ledger stays consistent, run again to continue');
          process.exit(EXIT.interrupted);
        }
        screen.stopThenLine(
          `darkroom: ${sig}: no new calls; calls in flight get 2 s to finish, then are aborted (interrupt again to quit at once)`,
        );
        ac.abort(new Error(sig));
        backstop = clock.setTimer(() => {
          screen.stopThenLine('darkroom: still busy 4.5 s after the interrupt, exiting now; run again to continue');
          process.exit(EXIT.interrupted);
        }, 4500);
      };
      process.on('SIGINT', onSignal);
      process.on('SIGTERM', onSignal);
      try {
        const r = await (
          await import('./commands/run.js')
        ).runCommand(
          {
            jobs: a.jobs,
            ledger: a.ledger,
            baseUrl: a['base-url'],
            quiet: a.quiet,
            breakLock: a['break-lock'],
            redoSteps: a['redo-steps'],
            follow: a.follow,
            guards: { maxPhotos: a['max-photos'], maxCredits: a['max-credits'], maxDuration: a['max-duration'], until: a.until },
          },
          {
            env: process.env,
            stderr: err,
            signal: ac.signal,
            progress: await (await import('./commands/progress.js')).progressFor(process.stderr, process.env, a.quiet),
            screen,
            // A second Ctrl-C exits at once: the ledger's lock is let go of on the way out.
            onLockHeld: (release) => {
              process.once('exit', release);
              return () => process.off('exit', release);
            },
            // --json: stdout is the events alone, one JSON object a line; the human report goes to stderr.
            ...(a.json ? { onEvent: (e: { type: string }) => outJson(JSON.stringify(e)) } : {}),
          },
        );
        (a.json ? err : out)(r.report);
        if (r.problems !== '') err(r.problems);
        done(r.result.exitCode);
      } finally {
        if (backstop) clock.clearTimer(backstop);
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
      }
    },
  );
}

/** `darkroom status`: where the photos stand, once or redrawn until Ctrl-C (`--watch`). */
function statusCli(y: Argv, _done: Done): Argv {
  return y.command(
    'status [jobs]',
    'counts per state, calls used, failed and held photos with their reasons; works during a run',
    (y) =>
      y
        .positional('jobs', { type: 'string', describe: 'the jobs YAML (for its ledger path)' })
        .option('ledger', { type: 'string', requiresArg: true, describe: `ledger file (default: ./${DEFAULT_LEDGER_FILE})` })
        .option('json', {
          type: 'boolean',
          default: false,
          describe: 'one JSON object: total, done, failed, held, pending, … (docs/guide/commands.md)',
        })
        .option('watch', {
          type: 'boolean',
          default: false,
          describe: 'redraw every 2 s until Ctrl-C (with --json: one object per line)',
        })
        .example('darkroom status jobs.yaml --json', 'machine-readable status')
        .example('darkroom status jobs.yaml --watch', 'watch a run from another terminal')
        .epilog(exitCodesEpilog('status')),
    async (a) => {
      const args = { jobs: a.jobs, ledger: a.ledger, json: a.json };
      if (!a.watch) {
        (a.json ? outJson : out)(await (await import('./commands/status.js')).statusCommand(args, process.env));
        return;
      }
      const ac = new AbortController();
      const stop = () => ac.abort();
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      // On a terminal each frame replaces the last; elsewhere frames follow one another.
      const clear = process.stdout.isTTY && !a.json ? '\x1b[H\x1b[2J' : '';
      let first = true;
      try {
        for await (const frame of (await import('./commands/status.js')).watchStatus(args, process.env, ac.signal)) {
          // The clearing sequence is darkroom's own; the frame is the ledger's text, made safe.
          if (clear) process.stdout.write(clear);
          (a.json ? outJson : out)(clear ? `${frame}\n\nredrawn every 2 s · Ctrl-C to stop` : first || a.json ? frame : `\n${frame}`);
          first = false;
        }
      } finally {
        process.off('SIGINT', stop);
        process.off('SIGTERM', stop);
      }
    },
  );
}

/** `darkroom retry`: held, failed or rejected photos put back to work, after saying what it costs. */
function retryCli(y: Argv, done: Done): Argv {
  return y.command(
    'retry [jobs]',
    'put held, failed or rejected photos back to work (says what it costs and asks first)',
    (y) =>
      y
        .positional('jobs', { type: 'string', describe: 'the jobs YAML (for its ledger path)' })
        .option('held', { type: 'boolean', default: false, describe: 'retry the held photos (ambiguous creates, timed-out tasks)' })
        .option('failed', {
          type: 'boolean',
          default: false,
          describe: 'retry the failed photos (ERROR, OTHER, attempts used up, refused); paid ones are only downloaded',
        })
        .option('rejected', {
          type: 'boolean',
          default: false,
          describe: 'make the photos rejected in `darkroom review` again (their outputs kept aside as *.rejected-*); needs the jobs file',
        })
        .option('mode', {
          type: 'string',
          requiresArg: true,
          describe: 'with --rejected: the mode (general, graphics, portrait, text) for the steps that take one, this time',
        })
        .option('ledger', { type: 'string', requiresArg: true, describe: `ledger file (default: ./${DEFAULT_LEDGER_FILE})` })
        .option('yes', {
          type: 'boolean',
          default: false,
          describe: 'do not ask; accept the cost (for --held: that a second charge is possible)',
        })
        .option('break-lock', { type: 'string', requiresArg: true, describe: BREAK_LOCK })
        .example('darkroom retry --held jobs.yaml', 'list the held photos and ask before re-queueing them')
        .example('darkroom retry --failed jobs.yaml', 'list the failed photos, say what retrying costs, and ask')
        .example('darkroom retry --rejected jobs.yaml --mode portrait', 'make the rejected photos again, with mode portrait')
        .epilog(exitCodesEpilog('retry')),
    async (a) => {
      const r = await (
        await import('./commands/retry.js')
      ).retryCommand(
        {
          jobs: a.jobs,
          ledger: a.ledger,
          held: a.held,
          failed: a.failed,
          rejected: a.rejected,
          mode: a.mode,
          yes: a.yes,
          breakLock: a['break-lock'],
        },
        { env: process.env, interactive: Boolean(process.stdin.isTTY && process.stderr.isTTY), ask: askOnTerminal },
      );
      if (r.stderr) err(r.stderr);
      if (r.stdout) out(r.stdout);
      done(r.exitCode);
    },
  );
}

/** `darkroom review <jobs>`: the review page over the job's ledger, until Ctrl-C. */
function reviewCli(y: Argv, done: Done): Argv {
  return y.command(
    'review <jobs>',
    "look at every output in a browser, accept or reject it; decisions go to the job's ledger (also during a run)",
    (y) =>
      y
        .positional('jobs', { type: 'string', demandOption: true, describe: 'the jobs YAML file' })
        .option('ledger', { type: 'string', requiresArg: true, describe: "ledger file (default: the YAML's `ledger`)" })
        .option('port', {
          type: 'number',
          coerce: optionalNumberOption('port', PORT),
          describe: 'port to listen on (default: a free one)',
        })
        .option('host', {
          type: 'string',
          requiresArg: true,
          describe: 'address to listen on (default 127.0.0.1: this machine only); anyone who can reach it with the token can decide',
        })
        .option('open', { type: 'boolean', default: false, describe: 'open the default browser at the address' })
        .example('darkroom review jobs.yaml --open', 'P accept, X reject, U clear, ←/→ previous/next, F flip, Z zoom to 100 %')
        .epilog(exitCodesEpilog('review')),
    async (a) => {
      const r = await (
        await import('./commands/review.js')
      ).reviewCommand({ jobs: a.jobs, ledger: a.ledger, port: a.port, host: a.host, open: a.open }, process.env);
      // Until Ctrl-C (or SIGTERM): every decision is in the ledger already, so stopping loses none.
      // Listened for before the address is printed: whoever reads it may stop it at once.
      await new Promise<void>((resolve) => {
        const stop = () => {
          process.off('SIGINT', stop);
          process.off('SIGTERM', stop);
          void r.close().then(resolve, resolve);
        };
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
        out(r.line);
        for (const n of r.notes) err(n);
      });
      done(EXIT.interrupted);
    },
  );
}

/** `darkroom plan <jobs>`: what the job needs, creating nothing. */
function planCli(y: Argv, done: Done): Argv {
  return y.command(
    'plan <jobs>',
    'dry run: inputs found, skipped and done; calls, credits and the shortest time under the limits; creates nothing',
    (y) =>
      y
        .positional('jobs', { type: 'string', demandOption: true, describe: 'the jobs YAML file' })
        .option('ledger', {
          type: 'string',
          requiresArg: true,
          describe: "ledger file (default: the YAML's `ledger`); read only, never created",
        })
        .option('base-url', { type: 'string', requiresArg: true, describe: 'service base URL for the credits check' })
        .option('cost', {
          type: 'string',
          array: true,
          describe: 'credits per image of a capability the spec gives no cost for, e.g. --cost restore=1',
        })
        .option('latency', {
          type: 'number',
          coerce: optionalNumberOption('latency', { min: 0, minExclusive: true }),
          describe: "mean task latency to assume, seconds (default: the ledger's, else 20)",
        })
        .option('fail-rate', {
          type: 'number',
          default: 0,
          coerce: numberOption('fail-rate', { min: 0, max: 1, maxExclusive: true }),
          describe: 'share of tasks expected to end FAIL, 0 to below 1 (each is created again)',
        })
        .option('json', { type: 'boolean', default: false, describe: 'one JSON object (docs/guide/commands.md)' })
        .example('darkroom plan jobs.yaml', "what the job needs; with DARKROOM_API_KEY set, against the account's credits (1 call)")
        .example('darkroom plan jobs.yaml --cost restore=1 --cost upscale=2', 'price the capabilities the spec gives no cost for')
        .epilog(exitCodesEpilog('plan')),
    async (a) => {
      done(
        await plan({
          jobs: a.jobs,
          ledger: a.ledger,
          baseUrl: a['base-url'],
          cost: a.cost,
          latencyS: a.latency,
          failRate: a['fail-rate'],
          json: a.json,
        }),
      );
    },
  );
}

/** `darkroom credits`: the account's credits (one call per key). */
function creditsCli(y: Argv, _done: Done): Argv {
  return y.command(
    'credits [jobs]',
    "the account's credits (GET /api/v1/credits: one call per key, counted in its windows)",
    (y) =>
      y
        .positional('jobs', {
          type: 'string',
          describe: 'the jobs YAML (its keys and base URL); else DARKROOM_API_KEY and DARKROOM_BASE_URL',
        })
        .option('ledger', { type: 'string', requiresArg: true, describe: 'ledger where the call is recorded, when it exists' })
        .option('base-url', { type: 'string', requiresArg: true, describe: 'service base URL' })
        .option('json', {
          type: 'boolean',
          default: false,
          describe: '{"keys":[{"key","env","totalCredit","usedCredit","remainingCredit"}],"calls":N}',
        })
        .example('darkroom credits jobs.yaml', "remaining credits of the job's key(s)")
        .epilog(exitCodesEpilog('credits')),
    async (a) => {
      (a.json ? outJson : out)(
        await (
          await import('./commands/credits.js')
        ).creditsCommand({ jobs: a.jobs, ledger: a.ledger, baseUrl: a['base-url'], json: a.json }, { env: process.env, onWait: err }),
      );
    },
  );
}

/** `darkroom usage`: the calls left in each key's windows (one call per key). */
function usageCli(y: Argv, _done: Done): Argv {
  return y.command(
    'usage [jobs]',
    "calls left in the key's minute and hour windows (GET /api/v1/usage: this itself is a call, and counts)",
    (y) =>
      y
        .positional('jobs', {
          type: 'string',
          describe: 'the jobs YAML (its keys, base URL and ledger); else DARKROOM_API_KEY and DARKROOM_BASE_URL',
        })
        .option('ledger', {
          type: 'string',
          requiresArg: true,
          describe: 'ledger to compare with and record the call in, when it exists',
        })
        .option('base-url', { type: 'string', requiresArg: true, describe: 'service base URL' })
        .option('json', {
          type: 'boolean',
          default: false,
          describe: '{"keys":[{"key","env","apiKey","userId","minuteRemaining",…,"ledger"}],"calls":N}',
        })
        .example('darkroom usage jobs.yaml', "the service's view of the windows beside the ledger's")
        .epilog(exitCodesEpilog('usage')),
    async (a) => {
      (a.json ? outJson : out)(
        await (
          await import('./commands/credits.js')
        ).usageCommand({ jobs: a.jobs, ledger: a.ledger, baseUrl: a['base-url'], json: a.json }, { env: process.env, onWait: err }),
      );
    },
  );
}

/** `darkroom report`: one self-contained HTML file of the job. */
function reportCli(y: Argv, _done: Done): Argv {
  return y.command(
    'report [jobs]',
    'one self-contained HTML file: before/after thumbnails, failed and held photos, figures, throughput chart',
    (y) =>
      y
        .positional('jobs', { type: 'string', describe: 'the jobs YAML (for its ledger and output paths)' })
        .option('ledger', { type: 'string', requiresArg: true, describe: `ledger file (default: ./${DEFAULT_LEDGER_FILE})` })
        .option('out', {
          type: 'string',
          nargs: 1,
          default: 'report.html',
          describe: 'where to write the page: a file, or - (stdout), a pipe or a device, written straight',
        })
        .option('thumbs', {
          type: 'string',
          requiresArg: true,
          describe: 'thumbnails folder (default: <report name>-thumbs beside the report; none for stdout; --no-thumbs: none)',
        })
        .option('absolute-paths', {
          type: 'boolean',
          default: false,
          describe: 'show and link absolute paths (by default all are relative: the report can be shared)',
        })
        .option('page-size', {
          type: 'number',
          requiresArg: true,
          coerce: optionalNumberOption('page-size', { min: 1, integer: true }),
          describe: `photos on one page (default ${PHOTOS_PER_PAGE.toLocaleString('en')}); more get a summary page linking pages of photos in <report name>-photos beside it`,
        })
        .example('darkroom report jobs.yaml --out morning.html', 'then open it in any browser; it needs no network')
        .example('darkroom report jobs.yaml --out - | gzip > report.html.gz', 'the page on stdout (the summary goes to stderr)')
        .epilog(exitCodesEpilog('report')),
    async (a) => {
      const r = await (
        await import('./commands/report.js')
      ).reportCommand(
        { jobs: a.jobs, ledger: a.ledger, out: a.out, thumbs: a.thumbs, absolutePaths: a['absolute-paths'], pageSize: a['page-size'] },
        process.env,
        {
          stdout: process.stdout,
          stderr: process.stderr,
        },
      );
      (r.target.kind === 'stdout' ? err : out)(r.summary);
    },
  );
}

/** `darkroom manifest`: checksums and provenance of every output, in the output folder. */
function manifestCli(y: Argv, done: Done): Argv {
  return y.command(
    'manifest [jobs]',
    'checksums of every output (manifest-sha256.txt, manifest-sha512.txt, as sha256sum -c reads them) and provenance.csv, in the output folder',
    (y) =>
      y
        .positional('jobs', { type: 'string', describe: 'the jobs YAML (for its ledger and output folder)' })
        .option('ledger', {
          type: 'string',
          requiresArg: true,
          describe: `ledger file (default: ./${DEFAULT_LEDGER_FILE}); without a jobs file, the output folder is the one its last run wrote to`,
        })
        .option('json', {
          type: 'boolean',
          default: false,
          describe: '{"outputDir","files","outputs","written":[…],"missing":[…],"changed":[…],"elsewhere":[…],"takenNow"}',
        })
        .option('accepted', {
          type: 'boolean',
          default: false,
          describe: 'list only the photos whose output was accepted in `darkroom review` (their outputs, sidecars and intermediates)',
        })
        .example('darkroom manifest jobs.yaml', 'then: cd out && sha256sum -c manifest-sha256.txt')
        .epilog(exitCodesEpilog('manifest')),
    async (a) => {
      const r = await (
        await import('./commands/manifest.js')
      ).manifestCommand({ jobs: a.jobs, ledger: a.ledger, json: a.json, accepted: a.accepted });
      (a.json ? outJson : out)(r.text);
      done(r.exitCode);
    },
  );
}

/** `darkroom sim`: the built-in service simulator, until Ctrl-C. */
function simCli(y: Argv, _done: Done): Argv {
  return y.command(
    'sim',
    'serve the built-in service simulator on 127.0.0.1 (no key or network needed)',
    (y) =>
      y
        .option('port', { type: 'number', default: 8787, coerce: numberOption('port', PORT), describe: 'API port (0: any free port)' })
        .option('result-port', {
          type: 'number',
          default: 0,
          coerce: numberOption('result-port', PORT),
          describe: 'port of the result/upload origin',
        })
        .option('seed', { type: 'number', default: 1, coerce: numberOption('seed', { integer: true }) })
        .option('faults', { type: 'string', choices: ['none', 'flaky', 'hostile'], default: 'none' })
        .option('keys', { type: 'string', default: 'sim-key', describe: 'comma-separated valid API keys' })
        .option('latency-ms', {
          type: 'number',
          default: 3000,
          coerce: numberOption('latency-ms', { min: 0, minExclusive: true }),
          describe: 'median task latency (lognormal)',
        })
        .option('sigma', { type: 'number', default: 0.5, coerce: numberOption('sigma', { min: 0 }) })
        .option('fail-rate', {
          type: 'number',
          default: 0,
          coerce: numberOption('fail-rate', { min: 0, max: 1 }),
          describe: 'share of tasks ending FAIL, 0 to 1',
        })
        .example('darkroom sim --port 8787', 'then DARKROOM_API_KEY=sim-key darkroom run jobs.yaml --base-url http://127.0.0.1:8787')
        .epilog(exitCodesEpilog('sim')),
    async (a) => {
      const keys = a.keys
        .split(',')
        .map((k) => k.trim())
        .filter(Boolean);
      if (keys.length === 0) throw new UsageError(`--keys: expected comma-separated API keys, got ${JSON.stringify(a.keys)}`);
      const { simCommand } = await import('./sim.js');
      const { sim, banner } = await simCommand({
        port: a.port,
        resultPort: a['result-port'],
        seed: a.seed,
        faults: a.faults,
        keys,
        latencyMs: a['latency-ms'],
        sigma: a.sigma,
        failRate: a['fail-rate'],
      });
      out(banner);
      await new Promise<void>((resolve) => {
        const stop = () => void sim.close().then(resolve);
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
      });
    },
  );
}
