import { readFileSync } from 'node:fs';
import yargs from 'yargs';
import { clock } from '../clock.js';
import { describeError, EXIT } from './errors.js';
import { withGuardOptions } from './guardOptions.js';

// Each command's module is imported by its handler, when it runs: together they load
// undici, sharp, zod, yaml, pino, fast-glob… (0.4–0.6 s here, of a `status` on 100,000
// items that took 0.7–1.0 s), and `status`, `--help` and `--version` need none of that.

const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

const EPILOG = `Exit codes: 0 every photo done · 1 finished, some failed, held or not yet downloaded ·
2 usage or config error · 3 stopped by an account problem (invalid key, not subscribed, out of credits) ·
4 stopped at a limit you set (--max-photos, --max-credits, limits.maxCredits, --max-duration, --until); run again to continue · 130 interrupted.
The API key is read only from the environment variable the job names (service.apiKeyEnv).`;

const BREAK_LOCK =
  'HOST:PID — take over the ledger lock of a run on another host (or container) that you know is gone; darkroom names it when it refuses';

const out = (s: string) => process.stdout.write(s.endsWith('\n') ? s : `${s}\n`);
const err = (s: string) => process.stderr.write(s.endsWith('\n') ? s : `${s}\n`);

/** The entry point: the only place that prints results and chooses the exit code. */
export async function main(argv: string[]): Promise<number> {
  let exitCode: number = EXIT.ok;
  const parser = yargs(argv)
    .scriptName('darkroom')
    .usage('darkroom <command> [options]\n\nRun folders of photos through a remote AI image service, durably and within its limits.')
    .command(
      'run <jobs>',
      'discover the job\'s photos and take each through upload → create → poll → download',
      (y) =>
        withGuardOptions(y)
          .positional('jobs', { type: 'string', demandOption: true, describe: 'the jobs YAML file' })
          .option('ledger', { type: 'string', describe: 'ledger file (default: the YAML\'s `ledger`)' })
          .option('base-url', { type: 'string', describe: 'service base URL (wins over DARKROOM_BASE_URL and service.baseUrl)' })
          .option('quiet', { type: 'boolean', default: false, describe: 'no live display: one summary line a minute on stderr (as without a terminal)' })
          .option('break-lock', { type: 'string', describe: BREAK_LOCK })
          .option('redo-steps', {
            type: 'boolean',
            default: false,
            describe: 'the job\'s steps changed: redo the photos started under the old steps from the first step (each is paid again)',
          })
          .example('DARKROOM_API_KEY=… darkroom run jobs.yaml', 'run a job; run it again to resume')
          .epilog(EPILOG),
      async (a) => {
        const [{ runCommand }, { progressFor }] = await Promise.all([import('./run.js'), import('./progress.js')]);
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
          if (interrupts > 1) {
            err('darkroom: second interrupt, exiting now; the ledger stays consistent, run again to continue');
            process.exit(EXIT.interrupted);
          }
          err(`darkroom: ${sig}: no new calls; calls in flight get 2 s to finish, then are aborted (interrupt again to quit at once)`);
          ac.abort(new Error(sig));
          backstop = clock.setTimer(() => {
            err('darkroom: still busy 4.5 s after the interrupt, exiting now; run again to continue');
            process.exit(EXIT.interrupted);
          }, 4500);
        };
        process.on('SIGINT', onSignal);
        process.on('SIGTERM', onSignal);
        try {
          const r = await runCommand(
            {
              jobs: a.jobs,
              ledger: a.ledger,
              baseUrl: a['base-url'],
              quiet: a.quiet,
              breakLock: a['break-lock'],
              redoSteps: a['redo-steps'],
              guards: { maxPhotos: a['max-photos'], maxCredits: a['max-credits'], maxDuration: a['max-duration'], until: a.until },
            },
            {
              env: process.env,
              stderr: err,
              signal: ac.signal,
              progress: progressFor(process.stderr, process.env, a.quiet),
              // --json: stdout is the events alone, one JSON object a line; the human report goes to stderr.
              ...(a.json ? { onEvent: (e: { type: string }) => out(JSON.stringify(e)) } : {}),
            },
          );
          (a.json ? err : out)(r.report);
          exitCode = r.exitCode;
        } finally {
          if (backstop) clock.clearTimer(backstop);
          process.off('SIGINT', onSignal);
          process.off('SIGTERM', onSignal);
        }
      },
    )
    .command(
      'status [jobs]',
      'counts per state, calls used, failed and held photos with their reasons; works during a run',
      (y) =>
        y
          .positional('jobs', { type: 'string', describe: 'the jobs YAML (for its ledger path)' })
          .option('ledger', { type: 'string', describe: 'ledger file (default: ./darkroom.db)' })
          .option('json', { type: 'boolean', default: false, describe: 'one JSON object: total, done, failed, held, pending, … (see README)' })
          .option('watch', { type: 'boolean', default: false, describe: 'redraw every 2 s until Ctrl-C (with --json: one object per line)' })
          .example('darkroom status jobs.yaml --json', 'machine-readable status')
          .example('darkroom status jobs.yaml --watch', 'watch a run from another terminal'),
      async (a) => {
        const { statusCommand, watchStatus } = await import('./status.js');
        const args = { jobs: a.jobs, ledger: a.ledger, json: a.json };
        if (!a.watch) {
          out(await statusCommand(args, process.env));
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
          for await (const frame of watchStatus(args, process.env, ac.signal)) {
            out(clear ? `${clear}${frame}\n\nredrawn every 2 s · Ctrl-C to stop` : first || a.json ? frame : `\n${frame}`);
            first = false;
          }
        } finally {
          process.off('SIGINT', stop);
          process.off('SIGTERM', stop);
        }
      },
    )
    .command(
      'retry [jobs]',
      'put held or failed photos back to work (says what it costs and asks first)',
      (y) =>
        y
          .positional('jobs', { type: 'string', describe: 'the jobs YAML (for its ledger path)' })
          .option('held', { type: 'boolean', default: false, describe: 'retry the held photos (ambiguous creates, timed-out tasks)' })
          .option('failed', { type: 'boolean', default: false, describe: 'retry the failed photos (ERROR, OTHER, attempts used up, refused); paid ones are only downloaded' })
          .option('ledger', { type: 'string', describe: 'ledger file (default: ./darkroom.db)' })
          .option('yes', { type: 'boolean', default: false, describe: 'do not ask; accept the cost (for --held: that a second charge is possible)' })
          .option('break-lock', { type: 'string', describe: BREAK_LOCK })
          .example('darkroom retry --held jobs.yaml', 'list the held photos and ask before re-queueing them')
          .example('darkroom retry --failed jobs.yaml', 'list the failed photos, say what retrying costs, and ask'),
      async (a) => {
        const { askOnTerminal, retryCommand } = await import('./retry.js');
        const r = await retryCommand(
          { jobs: a.jobs, ledger: a.ledger, held: a.held, failed: a.failed, yes: a.yes, breakLock: a['break-lock'] },
          { env: process.env, interactive: Boolean(process.stdin.isTTY && process.stderr.isTTY), ask: askOnTerminal },
        );
        if (r.stderr) err(r.stderr);
        if (r.stdout) out(r.stdout);
        exitCode = r.exitCode;
      },
    )
    .command(
      'plan <jobs>',
      'dry run: inputs found, skipped and done; calls, credits and the shortest time under the limits; creates nothing',
      (y) =>
        y
          .positional('jobs', { type: 'string', demandOption: true, describe: 'the jobs YAML file' })
          .option('ledger', { type: 'string', describe: 'ledger file (default: the YAML\'s `ledger`); read only, never created' })
          .option('base-url', { type: 'string', describe: 'service base URL for the credits check' })
          .option('cost', { type: 'string', array: true, describe: 'credits per image of a capability the spec gives no cost for, e.g. --cost restore=1' })
          .option('latency', { type: 'number', describe: 'mean task latency to assume, seconds (default: the ledger\'s, else 20)' })
          .option('fail-rate', { type: 'number', default: 0, describe: 'share of tasks expected to end FAIL (each is created again)' })
          .option('json', { type: 'boolean', default: false, describe: 'one JSON object (see README)' })
          .example('darkroom plan jobs.yaml', 'what the job needs; with DARKROOM_API_KEY set, against the account\'s credits (1 call)')
          .example('darkroom plan jobs.yaml --cost restore=1 --cost upscale=2', 'price the capabilities the spec gives no cost for')
          .epilog('Exit codes: 0 the plan is made · 2 usage or config error · 3 the account check found a problem a run would stop on (invalid key, not subscribed, fewer credits than needed).'),
      async (a) => {
        const { parseCosts, planCommand } = await import('./plan.js');
        const r = await planCommand(
          { jobs: a.jobs, ledger: a.ledger, baseUrl: a['base-url'], costs: parseCosts(a.cost), latencyS: a.latency, failRate: a['fail-rate'], json: a.json },
          { env: process.env, onWait: err },
        );
        out(r.text);
        exitCode = r.exitCode;
      },
    )
    .command(
      'credits [jobs]',
      'the account\'s credits (GET /api/v1/credits: one call per key, counted in its windows)',
      (y) =>
        y
          .positional('jobs', { type: 'string', describe: 'the jobs YAML (its keys and base URL); else DARKROOM_API_KEY and DARKROOM_BASE_URL' })
          .option('ledger', { type: 'string', describe: 'ledger where the call is recorded, when it exists' })
          .option('base-url', { type: 'string', describe: 'service base URL' })
          .option('json', { type: 'boolean', default: false, describe: '{"keys":[{"key","env","totalCredit","usedCredit","remainingCredit"}],"calls":N}' })
          .example('darkroom credits jobs.yaml', 'remaining credits of the job\'s key(s)')
          .epilog(EPILOG),
      async (a) => {
        const { creditsCommand } = await import('./credits.js');
        out(await creditsCommand({ jobs: a.jobs, ledger: a.ledger, baseUrl: a['base-url'], json: a.json }, { env: process.env, onWait: err }));
      },
    )
    .command(
      'usage [jobs]',
      'calls left in the key\'s minute and hour windows (GET /api/v1/usage: this itself is a call, and counts)',
      (y) =>
        y
          .positional('jobs', { type: 'string', describe: 'the jobs YAML (its keys, base URL and ledger); else DARKROOM_API_KEY and DARKROOM_BASE_URL' })
          .option('ledger', { type: 'string', describe: 'ledger to compare with and record the call in, when it exists' })
          .option('base-url', { type: 'string', describe: 'service base URL' })
          .option('json', { type: 'boolean', default: false, describe: '{"keys":[{"key","env","apiKey","userId","minuteRemaining",…,"ledger"}],"calls":N}' })
          .example('darkroom usage jobs.yaml', 'the service\'s view of the windows beside the ledger\'s')
          .epilog(EPILOG),
      async (a) => {
        const { usageCommand } = await import('./credits.js');
        out(await usageCommand({ jobs: a.jobs, ledger: a.ledger, baseUrl: a['base-url'], json: a.json }, { env: process.env, onWait: err }));
      },
    )
    .command(
      'report [jobs]',
      'one self-contained HTML file: before/after thumbnails, failed and held photos, figures, throughput chart',
      (y) =>
        y
          .positional('jobs', { type: 'string', describe: 'the jobs YAML (for its ledger and output paths)' })
          .option('ledger', { type: 'string', describe: 'ledger file (default: ./darkroom.db)' })
          .option('out', { type: 'string', nargs: 1, default: 'report.html', describe: 'where to write the page: a file, or - (stdout), a pipe or a device, written straight' })
          .option('thumbs', { type: 'string', describe: 'thumbnails folder (default: <report name>-thumbs beside the report; none for stdout)' })
          .option('absolute-paths', { type: 'boolean', default: false, describe: 'show and link absolute paths (by default all are relative: the report can be shared)' })
          .example('darkroom report jobs.yaml --out morning.html', 'then open it in any browser; it needs no network')
          .example('darkroom report jobs.yaml --out - | gzip > report.html.gz', 'the page on stdout (the summary goes to stderr)'),
      async (a) => {
        const { reportCommand } = await import('./report.js');
        const r = await reportCommand({ jobs: a.jobs, ledger: a.ledger, out: a.out, thumbs: a.thumbs, absolutePaths: a['absolute-paths'] }, process.env);
        (r.target.kind === 'stdout' ? err : out)(r.summary);
      },
    )
    .command(
      'sim',
      'serve the built-in service simulator on 127.0.0.1 (no key or network needed)',
      (y) =>
        y
          .option('port', { type: 'number', default: 8787, describe: 'API port (0: any free port)' })
          .option('result-port', { type: 'number', default: 0, describe: 'port of the result/upload origin' })
          .option('seed', { type: 'number', default: 1 })
          .option('faults', { type: 'string', choices: ['none', 'flaky', 'hostile'], default: 'none' })
          .option('keys', { type: 'string', default: 'sim-key', describe: 'comma-separated valid API keys' })
          .option('latency-ms', { type: 'number', default: 3000, describe: 'median task latency (lognormal)' })
          .option('sigma', { type: 'number', default: 0.5 })
          .option('fail-rate', { type: 'number', default: 0, describe: 'share of tasks ending FAIL' })
          .example('darkroom sim --port 8787', 'then DARKROOM_API_KEY=sim-key darkroom run jobs.yaml --base-url http://127.0.0.1:8787'),
      async (a) => {
        const { simCommand } = await import('./sim.js');
        const { sim, banner } = await simCommand({
          port: a.port,
          resultPort: a['result-port'],
          seed: a.seed,
          faults: a.faults,
          keys: a.keys.split(',').map((k) => k.trim()).filter(Boolean),
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
    )
    .demandCommand(1, 'name a command: run, status, plan, retry, report, credits, usage or sim (see --help)')
    .strict()
    .epilog(EPILOG)
    .version(VERSION)
    .help()
    .wrap(Math.min(100, process.stdout.columns ?? 100))
    .fail((msg, e) => {
      if (e) throw e;
      throw new UsageError(msg);
    });
  try {
    await parser.parseAsync();
  } catch (e) {
    if (e instanceof UsageError) {
      err(`darkroom: ${e.message} (see darkroom --help)`);
      return EXIT.usage;
    }
    const d = describeError(e);
    err(d.line);
    return d.exitCode;
  }
  return exitCode;
}

class UsageError extends Error {}
