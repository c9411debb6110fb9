/**
 * The darkroom command's building blocks, what src/cli/ is built of (docs/ARCHITECTURE.md
 * § Import rules): each command as a function that returns what to print and the exit code,
 * never printing or exiting itself; internal, not the package's API (src/index.ts is). Each loads its modules when first called: `darkroom --help` and `status` load
 * none of the run's (undici, sharp, zod, yaml…).
 */
import type { PlanIo } from '../lib/plan.js';
import type { AccountCommandArgs } from './credits.js';
import type { PlanArgs } from './plan.js';
import type { ReportArgs, ReportResult } from './report.js';
import type { ManifestArgs } from './manifest.js';
import type { ManifestSummary } from '../lib/manifest.js';
import type { RetryArgs, RetryIo, RetryOutcome } from './retryTypes.js';
import type { ReviewArgs, ReviewStarted } from './review.js';
import type { RunArgs, RunIo, RunOutcome } from './run.js';
import type { StatusArgs } from './status.js';
import type { WriteStreams } from './outputFile.js';
import type { AccountIo } from '../lib/account.js';
import type { PlanResult } from '../lib/plan.js';

export { DEFAULT_LEDGER_FILE } from '../config/ledgerPath.js';
export type {
  AccountCommandArgs,
  AccountIo,
  ManifestArgs,
  ManifestSummary,
  PlanArgs,
  PlanIo,
  ReportArgs,
  ReportResult,
  RetryArgs,
  RetryIo,
  RetryOutcome,
  ReviewArgs,
  ReviewStarted,
  RunArgs,
  RunIo,
  RunOutcome,
  StatusArgs,
  WriteStreams,
};
export type { Display } from './run.js';
export type { GuardArgs } from './guards.js';
export type { OutputTarget } from './outputFile.js';

/** `darkroom run <jobs.yaml>`: everything checked before the first call, then the job to its end; the report to print and the exit code. */
export async function runCommand(args: RunArgs, io: RunIo): Promise<RunOutcome> {
  return (await import('./run.js')).runCommand(args, io);
}

/** How `darkroom run` shows progress on `stream`: live rows on a terminal, else a line a minute (docs/guide/commands.md § Watching a run). */
export async function progressFor(
  stream: NodeJS.WriteStream,
  env: NodeJS.ProcessEnv,
  quiet: boolean,
): Promise<NonNullable<RunIo['progress']>> {
  return (await import('./progress.js')).progressFor(stream, env, quiet);
}

/** `darkroom status`: the text (or `--json` line) from the ledger alone. */
export async function statusCommand(args: StatusArgs, env: NodeJS.ProcessEnv): Promise<string> {
  return (await import('./status.js')).statusCommand(args, env);
}

/** `darkroom status --watch`: a frame every 2 s until `signal` aborts. */
export async function* watchStatus(args: StatusArgs, env: NodeJS.ProcessEnv, signal: AbortSignal): AsyncGenerator<string> {
  yield* (await import('./status.js')).watchStatus(args, env, signal);
}

/** `darkroom retry --held|--failed`: says what it costs, asks through `io.ask`, re-queues. */
export async function retryCommand(args: RetryArgs, io: RetryIo): Promise<RetryOutcome> {
  return (await import('./retry.js')).retryCommand(args, io);
}

/** `darkroom plan` (and `run --dry-run`): the text or JSON to print, the exit code, and every figure. */
export async function planCommand(args: PlanArgs, io: PlanIo): Promise<{ exitCode: number; text: string; plan: PlanResult }> {
  return (await import('./plan.js')).planCommand(args, io);
}

/** `darkroom credits`: the account's credits per key of the job (one call each), as text or JSON. */
export async function creditsCommand(args: AccountCommandArgs, io: AccountIo): Promise<string> {
  return (await import('./credits.js')).creditsCommand(args, io);
}

/** `darkroom usage`: the key's windows as the service and the ledger count them (one call each), as text or JSON. */
export async function usageCommand(args: AccountCommandArgs, io: AccountIo): Promise<string> {
  return (await import('./credits.js')).usageCommand(args, io);
}

/** `darkroom report`: the HTML page and its thumbnails, written; the summary to print. `streams` take `--out -`. */
export async function reportCommand(args: ReportArgs, env: NodeJS.ProcessEnv, streams: WriteStreams): Promise<ReportResult> {
  return (await import('./report.js')).reportCommand(args, env, streams);
}

/** `darkroom manifest`: manifest-sha256.txt, manifest-sha512.txt and provenance.csv in the output folder; the lines to print and the exit code. */
export async function manifestCommand(args: ManifestArgs): Promise<{ text: string; exitCode: number; summary: ManifestSummary }> {
  return (await import('./manifest.js')).manifestCommand(args);
}

/** `darkroom review <jobs.yaml>`: the review page over the job's ledger, listening until `close()`; the address line to print first. */
export async function reviewCommand(args: ReviewArgs, env: NodeJS.ProcessEnv): Promise<ReviewStarted> {
  return (await import('./review.js')).reviewCommand(args, env);
}
