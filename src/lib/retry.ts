import { toDarkroomError } from '../errors.js';
import { Ledger, type FailedItem, type HeldItem, type HeldLock } from '../ledger/index.js';
import { releaseHeldSlots } from './heldSlots.js';
import { resolveJob, type Job, type JobOptions } from './job.js';

/** What a retry put back to work. */
export interface RetrySummary {
  /** Photos to be created again: a held create (a second charge is possible) or a failed one (credits for each success). */
  readonly recreated: number;
  /** Held photos whose task timed out: polled again, created anew only if gone or failed. */
  readonly repolled: number;
  /** Failed photos whose task succeeded (paid): only downloaded again, at no cost. */
  readonly downloads: number;
  /** Set when a key's store could not be written: the re-queued creates keep their task slots until they expire. */
  readonly note: string | null;
  /** `rejected: true`: the rejected outputs kept aside (where they are now) as their photos were sent back. */
  readonly keptAside?: readonly string[];
}

/**
 * A writer like any other: not while a run holds the ledger (L6). The lock is held until `fn`
 * is done, its promise settled when it returns one (retry --rejected keeps files aside).
 */
export function underLock<T>(
  file: string,
  command: string,
  breakLock: string | undefined,
  allowNetworkFs: boolean,
  fn: (ledger: Ledger) => T,
): T {
  const ledger = Ledger.open(file, { allowNetworkFs });
  let lock: HeldLock | undefined;
  const done = () => {
    lock?.release();
    ledger.close();
  };
  try {
    lock = ledger.acquireRunLock({ command, breakLock });
    const r = fn(ledger);
    if (r instanceof Promise) return r.finally(done) as T;
    done();
    return r;
  } catch (err) {
    done();
    throw err;
  }
}

/**
 * Put held photos back to work (L2: the operator's decision): an ambiguous create is
 * created again, which may charge a second time; a timed-out task is polled again. The
 * slots their creates held in the keys' budgets are freed.
 */
export function requeueHeld(
  file: string,
  held: readonly HeldItem[],
  opts: {
    readonly env: NodeJS.ProcessEnv;
    readonly breakLock?: string | undefined;
    readonly command?: string;
    readonly allowNetworkFs?: boolean;
  },
): RetrySummary {
  const allow = opts.allowNetworkFs ?? false;
  return underLock(file, opts.command ?? 'retry --held', opts.breakLock, allow, (ledger) => requeueHeldIn(ledger, held, opts.env, allow));
}

function requeueHeldIn(ledger: Ledger, held: readonly HeldItem[], env: NodeJS.ProcessEnv, allowNetworkFs: boolean): RetrySummary {
  // A stopped run's creates in flight are held first, as the next run's recovery would
  // hold them (the lock is ours: no run is sending).
  ledger.recover();
  const r = ledger.held.requeue(
    ['ambiguous', 'timeout'],
    'darkroom retry --held',
    held.map((h) => h.id),
  );
  // The operator's decision frees the task slots these creates held in their keys' budgets.
  const note = releaseHeldSlots(ledger, held, env, allowNetworkFs);
  return { recreated: r.recreated, repolled: r.repolled, downloads: 0, note: note || null };
}

/** Put failed photos back to work: paid ones to be downloaded, the others to be created again. */
export function requeueFailed(
  file: string,
  failed: readonly FailedItem[],
  opts: { readonly breakLock?: string | undefined; readonly allowNetworkFs?: boolean },
): RetrySummary {
  return underLock(file, 'retry --failed', opts.breakLock, opts.allowNetworkFs ?? false, (ledger) => requeueFailedIn(ledger, failed));
}

function requeueFailedIn(ledger: Ledger, failed: readonly FailedItem[]): RetrySummary {
  const r = ledger.failed.requeue(
    failed.map((f) => f.id),
    'darkroom retry --failed',
  );
  return { recreated: r.recreated, repolled: 0, downloads: r.downloads, note: null };
}

/** The held and failed photos of a ledger, read only. */
export function readRetryable(file: string): { held: HeldItem[]; failed: FailedItem[]; skipped: number; pipeline: string | undefined } {
  const reader = Ledger.open(file, { readonly: true });
  try {
    // Creates a stopped run left in flight are held by whoever writes next: listed with the held.
    const held = [...reader.held.list(), ...reader.stoppedRunCreates()].sort((a, b) => a.id - b.id);
    return { held, failed: reader.failed.list(), skipped: reader.failed.skipped(), pipeline: reader.getMeta('pipeline') };
  } finally {
    reader.close();
  }
}

/**
 * The library's `retry()` (src/index.ts): held and failed photos put back to work as
 * asked, with no question (the caller's yes); the next run() takes them on. The lock is
 * taken before anything is read (L6): while a run holds the ledger this rejects `LOCKED`,
 * even when nothing is held or failed yet.
 */
export async function retryJob(
  job: Job | string,
  what: { readonly held?: boolean; readonly failed?: boolean },
  opts: JobOptions,
): Promise<RetrySummary> {
  try {
    const { config, env } = resolveJob(job, opts);
    // NO_LEDGER for a job that never ran: the writer's open below would create one.
    readRetryable(config.ledger);
    const none: RetrySummary = { recreated: 0, repolled: 0, downloads: 0, note: null };
    const command = what.held && what.failed ? 'retry --held --failed' : what.failed ? 'retry --failed' : 'retry --held';
    return underLock(config.ledger, command, undefined, config.allowNetworkFs, (ledger) => {
      const held = what.held ? [...ledger.held.list(), ...ledger.held.inFlightOfStoppedRun()] : [];
      const failed = what.failed ? ledger.failed.list() : [];
      const h = held.length > 0 ? requeueHeldIn(ledger, held, env, config.allowNetworkFs) : none;
      const f = failed.length > 0 ? requeueFailedIn(ledger, failed) : none;
      return { recreated: h.recreated + f.recreated, repolled: h.repolled, downloads: f.downloads, note: h.note };
    });
  } catch (err) {
    throw toDarkroomError(err);
  }
}
