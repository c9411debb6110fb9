import { readFileSync } from 'node:fs';
import yargs from 'yargs';
import { describeError, EXIT } from './errors.js';
import { reportCommand } from './report.js';
import { runCommand } from './run.js';
import { simCommand } from './sim.js';
import { statusCommand } from './status.js';

const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

const EPILOG = `Exit codes: 0 every photo done · 1 finished, some failed or held · 2 usage or config error ·
3 stopped by an account problem (invalid key, not subscribed, out of credits) · 130 interrupted.
The API key is read only from the environment variable the job names (service.apiKeyEnv).`;

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
        y
          .positional('jobs', { type: 'string', demandOption: true, describe: 'the jobs YAML file' })
          .option('ledger', { type: 'string', describe: 'ledger file (default: the YAML\'s `ledger`)' })
          .option('base-url', { type: 'string', describe: 'service base URL (wins over DARKROOM_BASE_URL and service.baseUrl)' })
          .option('quiet', { type: 'boolean', default: false, describe: 'no progress lines' })
          .example('DARKROOM_API_KEY=… darkroom run jobs.yaml', 'run a job; run it again to resume'),
      async (a) => {
        const ac = new AbortController();
        let interrupts = 0;
        const onSignal = (sig: NodeJS.Signals) => {
          interrupts++;
          if (interrupts > 1) {
            err('darkroom: second interrupt, exiting now; the ledger stays consistent, run again to continue');
            process.exit(EXIT.interrupted);
          }
          err(`darkroom: ${sig}: finishing calls in flight, no new ones (interrupt again to quit at once)`);
          ac.abort(new Error(sig));
        };
        process.on('SIGINT', onSignal);
        process.on('SIGTERM', onSignal);
        try {
          const r = await runCommand(
            { jobs: a.jobs, ledger: a.ledger, baseUrl: a['base-url'], quiet: a.quiet },
            { env: process.env, stderr: err, signal: ac.signal },
          );
          out(r.report);
          exitCode = r.exitCode;
        } finally {
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
          .option('json', { type: 'boolean', default: false, describe: 'one JSON object: total, done, failed, held, pending, …' })
          .example('darkroom status jobs.yaml --json', 'machine-readable status'),
      (a) => {
        out(statusCommand({ jobs: a.jobs, ledger: a.ledger, json: a.json }, process.env));
      },
    )
    .command(
      'report [jobs]',
      'one self-contained HTML file: before/after thumbnails, failed and held photos, figures, throughput chart',
      (y) =>
        y
          .positional('jobs', { type: 'string', describe: 'the jobs YAML (for its ledger and output paths)' })
          .option('ledger', { type: 'string', describe: 'ledger file (default: ./darkroom.db)' })
          .option('out', { type: 'string', default: 'report.html', describe: 'where to write the page' })
          .example('darkroom report jobs.yaml --out morning.html', 'then open it in any browser; it needs no network'),
      async (a) => {
        out((await reportCommand({ jobs: a.jobs, ledger: a.ledger, out: a.out }, process.env)).summary);
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
    .demandCommand(1, 'name a command: run, status, report or sim (see --help)')
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
