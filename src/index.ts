/**
 * darkroom as a library: the package's main entry (`import { run } from 'darkroom'`). What a
 * program needs and no more: the functions, their options and results, the events, the
 * errors. The CLI is another client of the same functions, through src/commands/ (its
 * wording is not API). docs/library.md has a complete example.
 *
 * Nothing here touches the process: importing and running darkroom adds no signal or exit
 * listener, writes nothing to stdout or stderr and never exits. Logs go to the caller's
 * pino logger, or else to the job's log file beside its ledger (`log.file`), as
 * `darkroom run` writes them. Each function loads the modules it needs when it is called,
 * so importing this is cheap.
 *
 * @packageDocumentation
 */
import type { Logger } from 'pino';
import type { Job, JobOptions } from './lib/job.js';
import type { Plan, PlanOptions, PlanResult, PlanStep } from './lib/plan.js';
import type { ManifestSummary } from './lib/manifest.js';
import type { RetrySummary } from './lib/retry.js';
import type { RunOptions as LibRunOptions, RunSummary } from './lib/run.js';
import type { StatusSummary } from './lib/status.js';
import type { LimitEvent, PhotoCounts, PhotoEvent, RunEvent, SummaryEvent } from './run/events.js';

export { DarkroomError, EXIT, RunStoppedError, type DarkroomErrorCode, type ExitCode } from './errors.js';
// How names, captions and messages from outside are shown without acting on a terminal (docs/names.md).
export { jsonSafe, shownText, terminalSafe } from './display.js';

export type { Job, JobOptions, Plan, PlanOptions, PlanResult, PlanStep, RetrySummary, RunSummary, StatusSummary };
export type { RunEvent, PhotoEvent, LimitEvent, SummaryEvent, PhotoCounts };

/** How {@link run} is made. Every field may be left out, and so may the object (`null` or `undefined` is `{}`). */
export interface RunOptions extends JobOptions {
  /**
   * Aborting it stops the run: no new call is started, calls in flight get 2 s to finish
   * and are then aborted with their outcome recorded, and `run()` resolves within seconds
   * with the figures so far (`interrupted: true`, `pending` > 0). The ledger stays
   * consistent; a later `run()` continues where this one stopped. Any number of runs may
   * share one signal: a run adds no listener to it.
   */
  readonly signal?: AbortSignal | undefined;
  /**
   * Each event of the run as it happens, the same as `darkroom run --json` writes: one per
   * photo that ends (`done`, `failed`, `held`, `skipped`), `limit`, and
   * `summary` last. Called synchronously: keep it quick.
   *
   * If it throws, darkroom never lets the exception escape (no unhandled rejection, no
   * uncaught exception): its first throw stops the run as aborting `signal` would — nothing
   * new is started, the calls in flight finish and are recorded, the ledger stays
   * consistent — no further event reaches it, and `run()` rejects with a
   * {@link RunStoppedError} of code `EVENT_HANDLER`: its `cause` is what the handler threw,
   * its `summary` the figures when the run stopped (a throw on `summary` itself: the run's
   * own figures). A later `run()` continues where this one stopped.
   */
  readonly onEvent?: ((e: RunEvent) => void) | undefined;
  /**
   * A pino logger for the run's log lines (one per API call at info, warnings, errors;
   * the key never appears, only its fingerprint `k_…`). Default: JSON lines to the job's
   * log file (`log.file`, else beside the ledger), as `darkroom run` writes. A line the
   * logger throws on is lost; the throw never reaches the run or the process.
   */
  readonly logger?: Logger | undefined;
}

/**
 * Read and check a jobs YAML file (docs/guide/job-file.md). Its relative paths come back
 * absolute, resolved against the file's folder.
 *
 * @throws {@link DarkroomError} `CONFIG` naming the file, the key and what was expected.
 */
export async function loadJob(path: string): Promise<Job> {
  const lib = await import('./lib/job.js');
  return lib.loadJob(path);
}

/**
 * Run a job to its end: find its photos, take each through upload → create → poll →
 * download, and write the outputs; a job run before continues where it stopped (every
 * photo is created once). Resolves with the ledger's figures when the run ended, every
 * photo done or not (`failed`, `held`, or `pending` after an abort).
 *
 * @param job - a {@link Job} object (relative paths against `opts.cwd`) or the path of a jobs YAML (relative paths against its folder)
 * @throws {@link DarkroomError} before any work: `CONFIG` (the job, a missing key, an option
 *   of the wrong type), `LOCKED` (another run holds the ledger), `ABORTED` (the signal was
 *   aborted already), `NO_LEDGER`…; a {@link RunStoppedError} with the figures in `summary`
 *   when the run stopped for a problem that must be fixed first: `ACCOUNT`, `CONFIG`,
 *   `NOT_THE_SERVICE` or `SERVICE_UNREACHABLE` (the base URL: the codes {@link plan} gives
 *   for it), `OUTPUT`, `LEDGER_MOVED`, or `EVENT_HANDLER` (`opts.onEvent` threw).
 */
export async function run(job: Job | string, opts?: RunOptions | null): Promise<RunSummary> {
  const { runJobLibrary } = await import('./lib/run.js');
  return runJobLibrary(job, (opts ?? {}) satisfies LibRunOptions);
}

/**
 * Where a job's photos stand, from its ledger alone (safe while a run writes it): the
 * object `darkroom status --json` prints.
 *
 * @throws {@link DarkroomError} `NO_LEDGER` when the job never ran, `CONFIG` for a bad job.
 */
export async function status(job: Job | string, opts?: JobOptions | null): Promise<StatusSummary> {
  const { statusOfJob } = await import('./lib/status.js');
  return statusOfJob(job, opts ?? {});
}

/**
 * A dry run: the photos a run would do, the fewest calls, the shortest time the limits
 * allow and the credits (null when a step's price is unknown). Reads the ledger if there
 * is one, never creates it. With the job's key set, one GET /api/v1/credits checks the
 * account (see `details.account`); nothing is uploaded or created.
 *
 * @throws {@link DarkroomError} `CONFIG`, `NOT_THE_SERVICE` or `SERVICE_UNREACHABLE` (the base URL), `KEY_BUSY`.
 */
export async function plan(job: Job | string, opts?: (JobOptions & PlanOptions) | null): Promise<Plan> {
  const { planOfJob } = await import('./lib/plan.js');
  return planOfJob(job, opts ?? {});
}

/**
 * Write `manifest-sha256.txt`, `manifest-sha512.txt` (BagIt payload-manifest lines, which
 * `sha256sum -c` reads from the output folder) and `provenance.csv` in the job's output
 * folder, from the checksums recorded when each file was written; every file is read again,
 * and those missing or changed since are named in the result.
 *
 * @throws {@link DarkroomError} `NO_LEDGER` when the job never ran, `CONFIG` for a bad job, `OUTPUT_WRITE` when the folder cannot take the files.
 */
export async function manifest(job: Job | string, opts?: JobOptions | null): Promise<ManifestSummary> {
  const { manifestOfJob } = await import('./lib/manifest.js');
  return manifestOfJob({ ...(opts ?? {}), job });
}

/**
 * Put held photos (`held: true`: creates whose outcome is unknown — creating them again
 * may charge a second time — and timed-out tasks) and failed ones (`failed: true`) back to
 * work; the next {@link run} takes them on. Asks nothing: calling it is the decision.
 *
 * The ledger's lock is taken before anything is read: while a run (or another retry)
 * holds it, this rejects `LOCKED` and changes nothing, whatever is held or failed.
 *
 * @throws {@link DarkroomError} `LOCKED` while a run holds the ledger, `NO_LEDGER`.
 */
export async function retry(
  job: Job | string,
  what: { readonly held?: boolean; readonly failed?: boolean } | null | undefined,
  opts?: JobOptions | null,
): Promise<RetrySummary> {
  const { retryJob } = await import('./lib/retry.js');
  return retryJob(job, what ?? {}, opts ?? {});
}
