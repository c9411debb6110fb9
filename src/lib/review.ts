import { ReviewError, toDarkroomError } from '../errors.js';
import { Ledger, type Decision, type ReviewAction, type ReviewCounts } from '../ledger/index.js';
import { startReviewServer } from '../review/server.js';
import { resolveJob, type Job, type JobOptions } from './job.js';

/** Where the review page listens. */
export interface ReviewOptions extends JobOptions {
  /** Port (default: a free one). */
  readonly port?: number | undefined;
  /** Address to listen on (default 127.0.0.1: this machine only). */
  readonly host?: string | undefined;
}

/** The review page, running. */
export interface ReviewHandle {
  /** Its address with the token, `http://127.0.0.1:PORT/?token=…`: whoever has it can decide. */
  readonly url: string;
  /** Stop the page (its decisions are in the ledger already). */
  close(): Promise<void>;
}

/** A photo's decision as a program reads it. */
export interface ReviewDecision {
  /** The photo: its path under input.dir (a URL input's output name). */
  readonly photo: string;
  readonly decision: Decision;
  /** A rejection's few words, if any. */
  readonly reason: string | null;
  readonly atMs: number;
  /** The output it is about: its path and its SHA-256 as written. */
  readonly output: string | null;
  readonly outputSha256: string | null;
}

/** The library's `review()`: the page over the job's ledger, until `close()`. */
export async function reviewJob(job: Job | string, opts: ReviewOptions): Promise<ReviewHandle> {
  try {
    const { config } = resolveJob(job, opts);
    const s = await startReviewServer({
      ledgerFile: config.ledger,
      allowNetworkFs: config.allowNetworkFs,
      host: opts.host,
      port: opts.port,
    });
    return { url: s.url, close: () => s.close() };
  } catch (err) {
    throw toDarkroomError(err);
  }
}

/** The library's `decisions()`: the counts over the done photos, and every decision that stands, by path. */
export async function decisionsOfJob(job: Job | string, opts: JobOptions): Promise<{ counts: ReviewCounts; decisions: ReviewDecision[] }> {
  try {
    const { config } = resolveJob(job, opts);
    const ledger = Ledger.open(config.ledger, { readonly: true });
    try {
      const decisions: ReviewDecision[] = [];
      for (const [id, d] of ledger.reviews.decisions()) {
        const p = ledger.reviews.photo(id)!;
        decisions.push({
          photo: p.path,
          decision: d.decision,
          reason: d.reason,
          atMs: d.atMs,
          output: p.outputPath,
          outputSha256: p.sha256,
        });
      }
      decisions.sort((a, b) => (a.photo < b.photo ? -1 : a.photo > b.photo ? 1 : 0));
      return { counts: ledger.reviews.counts(), decisions };
    } finally {
      ledger.close();
    }
  } catch (err) {
    throw toDarkroomError(err);
  }
}

/**
 * The library's `decide()`: a decision about a done photo's output as it is now (or, with
 * `sha256`, only if it is still that output), committed before this resolves; beside a
 * running run or review page alike. `clear` takes a decision back.
 */
export async function decideJob(
  job: Job | string,
  photo: string,
  action: ReviewAction,
  opts: JobOptions & { readonly reason?: string | undefined; readonly sha256?: string | undefined },
): Promise<ReviewDecision | null> {
  try {
    const { config } = resolveJob(job, opts);
    Ledger.open(config.ledger, { readonly: true }).close();
    const ledger = Ledger.open(config.ledger, { allowNetworkFs: config.allowNetworkFs });
    try {
      const id = ledger.reviews.idOf(photo);
      if (id === undefined)
        throw new ReviewError(`no photo ${JSON.stringify(photo)} in ${config.ledger}: name it by its path under input.dir`);
      const now = ledger.reviews.photo(id)!;
      const seen = opts.sha256 ?? now.sha256;
      const r = ledger.reviews.record(id, action, seen, opts.reason ?? null);
      if (r.decision === null) return null;
      return { photo: now.path, decision: r.decision, reason: r.reason, atMs: r.atMs, output: now.outputPath, outputSha256: now.sha256 };
    } finally {
      ledger.close();
    }
  } catch (err) {
    throw toDarkroomError(err);
  }
}
