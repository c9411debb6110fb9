import path from 'node:path';
import type { Config } from '../config/index.js';
import type { Ledger, LedgerStatus } from '../ledger/index.js';
import type { GuardName } from './guards.js';

/**
 * The events of one run, in the order they happened: what `darkroom run --json` writes
 * one per line on stdout, and what a library caller gets through `RunOptions.onEvent`.
 * Fields are only ever added, never renamed or given another meaning.
 */
export type RunEvent = PhotoEvent | LimitEvent | SummaryEvent;

/** A photo reached an end state during this run (each photo once per state it reaches). */
export interface PhotoEvent {
  /** done: its output is on disk; failed, held, skipped: see `reason`. */
  readonly type: 'done' | 'failed' | 'held' | 'skipped';
  /** Its path relative to input.dir (a URL input: its name), '/'-separated. */
  readonly input: string;
  /** Every current name of the photo (one file, or several with the same content), relative to input.dir. */
  readonly inputs: readonly string[];
  /** Its output files relative to output.dir (done only; else empty). */
  readonly outputs: readonly string[];
  /** Why it failed, was held or was skipped; null when done. */
  readonly reason: string | null;
  /** The step it was at, 0-based as `darkroom status --json`'s `steps[].index`. */
  readonly stepIndex: number;
  /** The service's requestId of its latest call that said something about it, and its task, to quote to support. */
  readonly requestId: string | null;
  readonly taskId: string | null;
  /** When, ms since the epoch. */
  readonly atMs: number;
}

/** A spending guard tripped: no new photos or creates from here, paid work still finished. */
export interface LimitEvent {
  readonly type: 'limit';
  readonly guard: GuardName;
  readonly message: string;
  readonly atMs: number;
}

/** Where a job's photos stand, as `darkroom status --json` counts them (the run's summary carries the same). */
export interface PhotoCounts {
  /** Photos in all: `total = done + failed + held + pending`. */
  readonly total: number;
  /** Photos with every step's output in place. */
  readonly done: number;
  /** Photos that went wrong and will not finish without a change (`darkroom retry --failed`). */
  readonly failed: number;
  /** Photos an operator must decide on (`darkroom retry --held`, `retry(job, { held: true })`). */
  readonly held: number;
  /** Photos not yet in an end state: a later run takes them on. */
  readonly pending: number;
  /**
   * Inputs darkroom will not send until they change (not an image, damaged, no place for
   * their output): refused before any call; outside `total` and every other figure, and no
   * reason for exit 1.
   */
  readonly skipped: number;
  /** Of `pending`: paid for, output not on disk yet; the next run downloads them first. */
  readonly paidNotDownloaded: number;
}

/** The last event: the ledger's figures after the run, and how the process exits. */
export interface SummaryEvent extends PhotoCounts {
  readonly type: 'summary';
  readonly exitCode: number;
  /** Why the run stopped early (a limit, the account, the disk, a config problem, an interrupt); null when it ran to the end. */
  readonly stopped: { readonly kind: string; readonly message: string } | null;
  /** Credits this run spent as far as known (only with a credit limit set); null otherwise. */
  readonly creditsSpent: number | null;
  readonly atMs: number;
}

/** The run's ending figures: the `summary` event of `run --json`, less its type. */
export interface RunSummary extends Omit<SummaryEvent, 'type'> {
  /**
   * The run was stopped before its end: the caller's signal (or, in an `EVENT_HANDLER`
   * error's summary, the handler's throw) stopped it; nothing new was started, `pending`
   * photos wait for the next run.
   */
  readonly interrupted: boolean;
}

/** Input paths as events name them: '/'-separated on every platform. */
const slash = (p: string) => p.split(path.sep).join('/');

/**
 * Follows the ledger's transitions from where the run began and hands each photo that
 * reached done, failed, held or skipped to `emit`, once. Read from the ledger rather than
 * told by the stages: every path that ends a photo writes its transition there, in the
 * same transaction, so no outcome is missed and none is told that did not happen.
 */
export class PhotoEventFeed {
  private mark: number;

  constructor(
    private readonly ledger: Ledger,
    private readonly config: Config,
    private readonly emit: (e: RunEvent) => void,
  ) {
    this.mark = ledger.photoEvents.lastId();
  }

  /** Emit what happened since the last pull. Cheap when nothing did: one primary-key range probe. */
  pull(): void {
    for (;;) {
      const rows = this.ledger.photoEvents.since(this.mark);
      for (const r of rows) {
        this.mark = r.id;
        const names = this.ledger.inputs.inputsOf(r.itemId);
        const inputs = names.length > 0 ? names.map((n) => slash(n.name)) : [slash(r.path)];
        const outputs =
          r.state === 'done'
            ? names.flatMap((n) => (n.output_path ? [slash(path.relative(this.config.output.dir, n.output_path))] : []))
            : [];
        this.emit({
          type: r.state,
          input: slash(r.path),
          inputs,
          outputs,
          reason: r.state === 'done' ? null : r.reason,
          stepIndex: r.stepIndex,
          requestId: r.requestId,
          taskId: r.taskId,
          atMs: r.atMs,
        });
      }
      if (rows.length === 0) return;
    }
  }
}

/** The summary event from the run's ending figures. */
export function summaryEvent(
  status: LedgerStatus,
  exitCode: number,
  stopped: SummaryEvent['stopped'],
  creditsSpent: number | null,
  atMs: number,
): SummaryEvent {
  return {
    type: 'summary',
    total: status.total,
    done: status.done,
    failed: status.failed,
    held: status.held,
    pending: status.pending,
    skipped: status.skipped,
    paidNotDownloaded: status.paidNotDownloaded,
    exitCode,
    stopped,
    creditsSpent,
    atMs,
  };
}
