import type { ApiClient } from '../api/index.js';
import { type ApiError, EXIT } from '../errors.js';
import { clock } from '../clock.js';
import type { Config } from '../config/index.js';
import type { Ledger } from '../ledger/index.js';
import { LOG_ONLY, type Logger } from '../log.js';
import { fullJitter } from '../scheduler/backoff.js';
import type { RunControl } from '../scheduler/laneTypes.js';
import type { PollPlanner } from '../scheduler/polling.js';

/** Why a run stopped early because of the account (exit code 3). */
export interface AccountStop {
  readonly error: ApiError;
  /** 20601: in-flight work was finished, only new creates stopped. */
  readonly creditsOnly: boolean;
}

/**
 * Why a run stopped early for something other than the account: the operator's line and
 * the exit code. A config problem (the base URL redirects, the ledger was moved) stops
 * every call at once and exits 2; a local problem with the outputs (disk full, read-only
 * folder) stops new creates and uploads but finishes the work already paid for, and exits 1.
 * Either way every photo stays resumable: nothing is marked failed for it. A spending guard
 * the operator set (run/guards.ts) stops like a full disk, with exit 4.
 */
export interface RunHalt {
  readonly kind: 'config' | 'disk' | 'ledger' | 'limit';
  /** One line: what happened and what to do. */
  readonly message: string;
  readonly exitCode: typeof EXIT.someFailed | typeof EXIT.usage | typeof EXIT.limit;
  /**
   * A config halt for the base URL: the code `plan()` gives for the same URL (the library's
   * RunStoppedError carries it), or ExifTool that cannot start; else the halt's code follows
   * from its kind.
   */
  readonly code?: 'NOT_THE_SERVICE' | 'SERVICE_UNREACHABLE' | 'METADATA_TOOL' | undefined;
  /** true: no call of any kind from now on; false: paid work (polls, downloads) goes on. */
  readonly immediate: boolean;
}

export interface RunState extends RunControl {
  accountStop: AccountStop | undefined;
  /** The first halt wins; see haltRun. */
  halt: RunHalt | undefined;
}

/** Stop the run for a config, disk or ledger problem or a limit set (RunHalt); the first reason is the one reported. */
export function haltRun(run: RunState, halt: RunHalt): void {
  run.halt ??= halt;
  run.noCreates = true;
  if (halt.immediate) run.stopped = true;
}

/** What every stage of one lane needs. */
export interface StageContext {
  readonly ledger: Ledger;
  readonly client: ApiClient;
  readonly keyFp: string;
  readonly config: Config;
  readonly run: RunState;
  /** This lane's poll timing (and the latency model shared by all lanes). */
  readonly polling: PollPlanner;
  readonly random: () => number;
  readonly log: Logger;
  /**
   * Aborts calls in flight: after an interrupt's grace period, or at once on a second
   * interrupt. Each stage records what the abort left behind (a create sent and aborted
   * is ambiguous, its item held).
   */
  readonly abort: AbortSignal;
}

/**
 * When to try again after a retryable error: Retry-After if the server gave one (spec
 * retry rule 1), else its RateLimit-Reset, else exponential backoff with full jitter.
 */
export function retryAt(err: ApiError, failures: number, random: () => number): number {
  const now = clock.now();
  if (err.retryAfterMs !== null && err.retryAfterMs >= 0) return now + err.retryAfterMs;
  const reset = err.rateLimit?.resetAtMs ?? null;
  if (reset !== null && reset > now) return reset;
  return now + 1000 + fullJitter(failures, random);
}

/** An account problem stops the run: 401 and 24403 at once, 20601 after in-flight work. */
export function stopForAccount(ctx: Pick<StageContext, 'run' | 'log'>, err: ApiError): void {
  const creditsOnly = err.businessCode === 20601;
  if (!ctx.run.accountStop || (ctx.run.accountStop.creditsOnly && !creditsOnly)) {
    ctx.run.accountStop = { error: err, creditsOnly };
  }
  ctx.run.noCreates = true;
  if (!creditsOnly) ctx.run.stopped = true;
  // The command's `stopped: …` line says it to the operator (commands/stops.ts).
  ctx.log.error(
    { code: err.answer, httpStatus: err.httpStatus, businessCode: err.businessCode, requestId: err.requestId, ...LOG_ONLY },
    err.message,
  );
}
