import { requireBaseUrl, requireInputDir, resolveKeys } from '../config/index.js';
import { DarkroomError } from '../errors.js';
import { RunStoppedError, type RunSummary } from './runStopped.js';
import type { Logger } from '../log.js';
import type { RunEvent } from '../run/events.js';
import type { RunResult } from '../run/runner.js';
import { toDarkroomError } from './errors.js';
import { resolveJob, type Job, type JobOptions } from './job.js';
import { runSession } from './session.js';
import { stateDirFrom } from './stateDir.js';

/** How a library `run()` is made (src/index.ts documents each). */
export interface RunOptions extends JobOptions {
  readonly signal?: AbortSignal | undefined;
  readonly onEvent?: ((e: RunEvent) => void) | undefined;
  readonly logger?: Logger | undefined;
}

export type { RunSummary };

function failureOf(r: RunResult, summary: RunSummary): RunStoppedError | null {
  if (r.accountStop) return new RunStoppedError('ACCOUNT', r.accountStop.error.message, summary, r.accountStop.error);
  if (!r.halt || r.halt.exitCode !== 2) return null;
  const code = r.halt.kind === 'disk' ? 'OUTPUT' : r.halt.kind === 'ledger' ? 'LEDGER_MOVED' : 'CONFIG';
  return new RunStoppedError(code, r.halt.message, summary);
}

/** The library's `run()` (src/index.ts): one run of the job through runSession, as `darkroom run` makes it. */
export async function runJobLibrary(job: Job | string, opts: RunOptions): Promise<RunSummary> {
  try {
    if (opts.signal?.aborted) throw new DarkroomError('ABORTED', 'the signal was aborted before the run started: nothing was done');
    const { config, env } = resolveJob(job, opts);
    requireInputDir(config);
    const baseUrl = requireBaseUrl(config);
    const keys = resolveKeys(config, env);
    let summary: RunSummary | undefined;
    const { result } = await runSession({
      config,
      baseUrl,
      keys,
      stateDir: stateDirFrom(env),
      logger: opts.logger,
      signal: opts.signal,
      onEvent: (e) => {
        if (e.type === 'summary') {
          const { type: _, ...figures } = e;
          summary = { ...figures, interrupted: opts.signal?.aborted ?? false };
        }
        opts.onEvent?.(e);
      },
    });
    const failure = failureOf(result, summary!);
    if (failure) throw failure;
    return summary!;
  } catch (err) {
    throw toDarkroomError(err);
  }
}
