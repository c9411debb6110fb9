/**
 * darkroom as a library: the package's main entry (`import { run } from 'darkroom'`). What a
 * program needs and no more: the functions, their options and results, the events, the
 * errors. The CLI is another client of the same functions, through src/cli/commands/ (its
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
import type { Job, JobOptions } from './lib/job.js';
import type { Plan, PlanOptions, PlanResult, PlanStep } from './lib/plan.js';
import type { ManifestSummary } from './lib/manifest.js';
import type { RetrySummary } from './lib/retry.js';
import type { ReviewDecision, ReviewHandle, ReviewOptions } from './lib/review.js';
import type { RunOptions } from './lib/run.js';
import type { StatusSummary } from './lib/status.js';
import type { FoundEvent, LimitEvent, PhotoEvent, RunEvent } from './run/events.js';

export { DarkroomError, EXIT, RunStoppedError, type DarkroomErrorCode, type ExitCode } from './errors.js';
import type { PhotoCounts, RunSummary, SummaryEvent } from './errors.js';
// How names, captions and messages from outside are shown without acting on a terminal (docs/names.md).
export { jsonSafe, shownText, terminalSafe } from './display.js';

export type { Job, JobOptions, Plan, PlanOptions, PlanResult, PlanStep, RetrySummary, RunOptions, RunSummary, StatusSummary };
export type { ReviewDecision, ReviewHandle, ReviewOptions };
export type { RunEvent, PhotoEvent, FoundEvent, LimitEvent, SummaryEvent, PhotoCounts };

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
  return runJobLibrary(job, opts ?? {});
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
 * may charge a second time — and timed-out tasks), failed ones (`failed: true`) and those
 * rejected in review (`rejected: true`, made again with the job's steps, or `mode` where a
 * step takes one; their outputs kept aside, see `keptAside`) back to work; the next
 * {@link run} takes them on. Asks nothing: calling it is the decision.
 *
 * The ledger's lock is taken before anything is read: while a run (or another retry)
 * holds it, this rejects `LOCKED` and changes nothing, whatever is held or failed.
 *
 * @throws {@link DarkroomError} `LOCKED` while a run holds the ledger, `NO_LEDGER`.
 */
export async function retry(
  job: Job | string,
  what:
    | {
        readonly held?: boolean;
        readonly failed?: boolean;
        readonly rejected?: boolean;
        readonly mode?: 'general' | 'graphics' | 'portrait' | 'text';
      }
    | null
    | undefined,
  opts?: JobOptions | null,
): Promise<RetrySummary> {
  const { retryAll } = await import('./lib/retryRejected.js');
  return retryAll(job, what ?? {}, opts ?? {});
}

/**
 * Start the review page over the job's ledger (docs/guide/review.md): resolves with its
 * address, token included, once it listens; `close()` stops it. Decisions made on it go to
 * the ledger before the page shows them, beside a running {@link run} too.
 *
 * @throws {@link DarkroomError} `NO_LEDGER` when the job never ran, `USAGE` for a port in use or an address this machine lacks.
 */
export async function review(job: Job | string, opts?: ReviewOptions | null): Promise<ReviewHandle> {
  const { reviewJob } = await import('./lib/review.js');
  return reviewJob(job, opts ?? {});
}

/**
 * The review so far: accepted, rejected and not reviewed over the done photos, and each
 * decision that stands (about the photo's current output), by path.
 *
 * @throws {@link DarkroomError} `NO_LEDGER` when the job never ran.
 */
export async function decisions(
  job: Job | string,
  opts?: JobOptions | null,
): Promise<{ counts: { accepted: number; rejected: number; unreviewed: number }; decisions: ReviewDecision[] }> {
  const { decisionsOfJob } = await import('./lib/review.js');
  return decisionsOfJob(job, opts ?? {});
}

/**
 * Record a decision about a done photo's output (named by its path under input.dir), as the
 * review page does: committed before this resolves. `clear` takes a decision back (resolves null).
 * With `sha256`, only if the output is still that one.
 *
 * @throws {@link DarkroomError} `REVIEW` for a photo that is not there or not done, or whose output is no longer `sha256`.
 */
export async function decide(
  job: Job | string,
  photo: string,
  decision: 'accept' | 'reject' | 'clear',
  opts?: (JobOptions & { readonly reason?: string; readonly sha256?: string }) | null,
): Promise<ReviewDecision | null> {
  const { decideJob } = await import('./lib/review.js');
  return decideJob(job, photo, decision, opts ?? {});
}
