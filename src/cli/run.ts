import type { Transport } from '../api/index.js';
import { clock } from '../clock.js';
import { loadConfig, requireBaseUrl, requireInputDir, resolveKeys } from '../config/index.js';
import { acquireRunLock, Ledger } from '../ledger/index.js';
import { fileLogger } from '../log.js';
import { runJob, type RunResult } from '../pipeline/runner.js';
import { formatStatus } from './format.js';

export interface RunArgs {
  readonly jobs: string;
  readonly ledger?: string | undefined;
  readonly baseUrl?: string | undefined;
  readonly quiet?: boolean | undefined;
}

export interface RunIo {
  readonly env: NodeJS.ProcessEnv;
  readonly stderr: (line: string) => void;
  readonly signal?: AbortSignal;
  readonly transport?: Transport;
}

export interface RunOutcome {
  readonly exitCode: number;
  readonly report: string;
  readonly result: RunResult;
  readonly outputDir: string;
}

/** `darkroom run <jobs.yaml>`: everything checked before the first call, then the job to its end. */
export async function runCommand(args: RunArgs, io: RunIo): Promise<RunOutcome> {
  const config = loadConfig(args.jobs, { baseUrl: args.baseUrl, ledger: args.ledger, env: io.env });
  requireInputDir(config);
  const baseUrl = requireBaseUrl(config);
  const keys = resolveKeys(config, io.env);
  const release = acquireRunLock(config.ledger);
  const ledger = Ledger.open(config.ledger);
  const log = fileLogger(config.log.file, config.log.level);
  let lastLine = 0;
  const progress = () => {
    const now = clock.now();
    if (args.quiet || now - lastLine < 10_000) return;
    lastLine = now;
    const s = ledger.status(now);
    io.stderr(`darkroom: ${s.done}/${s.total} done · ${s.pending} pending · ${s.failed} failed · ${s.held} held`);
  };
  try {
    if (!args.quiet) io.stderr(`darkroom: running ${config.file} against ${new URL(baseUrl).origin} with ${keys.length} key(s); ledger ${config.ledger}`);
    const result = await runJob({
      config,
      baseUrl,
      keys,
      ledger,
      log,
      onActivity: progress,
      ...(io.signal ? { signal: io.signal } : {}),
      ...(io.transport ? { transport: io.transport } : {}),
    });
    const lines = [formatStatus(result.status, config.ledger, config.limits)];
    if (result.recovered.ambiguous > 0) {
      lines.push(`note: ${result.recovered.ambiguous} create(s) were in flight when an earlier run stopped; their photos are held (see above)`);
    }
    if (result.accountStop) lines.push(`stopped: ${result.accountStop.error.message}`);
    if (result.interrupted) lines.push('interrupted: run `darkroom run` again to continue where this one stopped');
    return { exitCode: result.exitCode, report: lines.join('\n'), result, outputDir: config.output.dir };
  } finally {
    log.flush();
    ledger.close();
    release();
  }
}
