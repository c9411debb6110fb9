import { requireBaseUrl, requireInputDir, resolveKeys } from '../config/index.js';
import { DarkroomError, EXIT, type RunStopCode, RunStoppedError, type RunSummary, toDarkroomError } from '../errors.js';
import type { Logger } from '../log.js';
import type { RunEvent } from '../run/events.js';
import type { RunHooks, RunResult } from '../run/context.js';
import { checkRunHooks, GuardedHandler, safeLogger } from './callerHooks.js';
import { resolveJob, type Job, type JobOptions } from './job.js';
import { runSession } from './session.js';
import { stateDirFrom } from './stateDir.js';

/**
 * How `run()` (src/index.ts) is made: where the job is (JobOptions), the hooks every run
 * takes (RunHooks: `signal`, `onEvent`) and a logger. Every field may be left out, and so
 * may the object (`null` or `undefined` is `{}`).
 */
export interface RunOptions extends JobOptions, RunHooks {
  /**
   * A pino logger for the run's log lines (one per API call at info, warnings, errors;
   * the key never appears, only its fingerprint `k_…`). Default: JSON lines to the job's
   * log file (`log.file`, else beside the ledger), as `darkroom run` writes. A line the
   * logger throws on is lost; the throw never reaches the run or the process.
   */
  readonly logger?: Logger | undefined;
}

function failureOf(r: RunResult, summary: RunSummary): RunStoppedError | null {
  if (r.accountStop) return new RunStoppedError('ACCOUNT', r.accountStop.error.message, summary, r.accountStop.error);
  if (!r.halt || r.halt.exitCode !== EXIT.usage) return null;
  const code: RunStopCode = r.halt.kind === 'disk' ? 'OUTPUT' : r.halt.kind === 'ledger' ? 'LEDGER_MOVED' : (r.halt.code ?? 'CONFIG');
  return new RunStoppedError(code, r.halt.message, summary);
}

/** The line a run stopped by its own event handler rejects with. */
function handlerMessage(thrown: { readonly err: unknown; readonly on: RunEvent['type'] }): string {
  const what = String((thrown.err as { message?: unknown } | null)?.message ?? thrown.err).split('\n')[0];
  const head = `the onEvent handler threw on a '${thrown.on}' event (${what})`;
  if (thrown.on === 'summary') return `${head}: the run had ended, its figures are in this error's summary; fix the handler`;
  return `${head}: the run stopped as an abort would, the work in flight recorded; fix the handler and run again to continue`;
}

/** The library's `run()` (src/index.ts): one run of the job through runSession, as `darkroom run` makes it. */
export async function runJobLibrary(job: Job | string, opts: RunOptions): Promise<RunSummary> {
  try {
    checkRunHooks(opts);
    if (opts.signal?.aborted) throw new DarkroomError('ABORTED', 'the signal was aborted before the run started: nothing was done');
    const { config, env } = resolveJob(job, opts);
    requireInputDir(config);
    const baseUrl = requireBaseUrl(config);
    const keys = resolveKeys(config, env);
    // The run's own signal: the caller's or a throwing handler stops it. AbortSignal.any
    // follows the caller's without an event listener on it, so any number of runs may
    // share one signal without a MaxListenersExceededWarning on stderr.
    const stop = new AbortController();
    const signal = opts.signal ? AbortSignal.any([opts.signal, stop.signal]) : stop.signal;
    const handler = new GuardedHandler(opts.onEvent, () => stop.abort(new Error('the onEvent handler threw')));
    const result = await runSession({
      config,
      baseUrl,
      keys,
      stateDir: stateDirFrom(env),
      env,
      logger: opts.logger ? safeLogger(opts.logger) : undefined,
      signal,
      follow: opts.follow,
      onEvent: (e) => handler.emit(e),
    });
    const { summary } = result;
    const thrown = handler.thrown;
    if (thrown) throw new RunStoppedError('EVENT_HANDLER', handlerMessage(thrown), summary, thrown.err);
    const failure = failureOf(result, summary);
    if (failure) throw failure;
    return summary;
  } catch (err) {
    throw toDarkroomError(err);
  }
}
