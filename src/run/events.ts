import path from 'node:path';
import type { Config } from '../config/index.js';
import type { Ledger, LedgerStatus } from '../ledger/index.js';
import { clock, type TimerHandle } from '../clock.js';
import type { GuardName, GuardTrip } from './guards.js';
import type { SummaryEvent } from '../errors.js';

/**
 * The events of one run, in the order they happened: what `darkroom run --json` writes
 * one per line on stdout, and what a library caller gets through `RunOptions.onEvent`.
 * Fields are only ever added, never renamed or given another meaning.
 */
export type RunEvent = PhotoEvent | FoundEvent | LimitEvent | SummaryEvent;

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

/**
 * `run --follow`: a new input was found in the followed folder (or a new line in the URL
 * list) and recorded, whole: it is queued for the steps, unless `skipped` says why not.
 */
export interface FoundEvent {
  readonly type: 'found';
  /** Its path relative to input.dir ('/'-separated), or a URL line's name. */
  readonly input: string;
  /** Its size in bytes; null for a URL. */
  readonly sizeBytes: number | null;
  /** Why it will not be worked on (it still did not decode after every look, say); null when it is queued. */
  readonly skipped: string | null;
  readonly atMs: number;
}

/** A spending guard tripped: no new photos or creates from here, paid work still finished. */
export interface LimitEvent {
  readonly type: 'limit';
  readonly guard: GuardName;
  readonly message: string;
  readonly atMs: number;
}

/** Input paths as events name them: '/'-separated on every platform. */
const slash = (p: string) => p.split(path.sep).join('/');

/**
 * What a run tells as it goes. Photo events follow the ledger's transitions from where the run
 * began: each photo that reached done, failed, held or skipped is handed to the caller's
 * `onEvent` once. Read from the ledger rather than told by the stages: every path that ends a
 * photo writes its transition there, in the same transaction, so no outcome is missed and none
 * is told that did not happen. Activity: every finished action (a call answered, a download
 * ended) wakes the downloader, sends the photo events it made and lets the caller redraw.
 */
export class RunEvents {
  /** The last transition told; undefined when no one listens (nothing is read then). */
  private mark: number | undefined;
  readonly #activity = new Notifier();

  constructor(
    private readonly ledger: Ledger,
    private readonly config: Config,
    private readonly hooks: { readonly onEvent?: ((e: RunEvent) => void) | undefined; readonly onActivity?: (() => void) | undefined },
  ) {
    if (hooks.onEvent) this.mark = ledger.photoEvents.lastId();
  }

  /** An action finished: the downloader looks again, its photo events are sent, the caller's display redrawn. */
  activity(): void {
    this.#activity.notify();
    this.pull();
    this.hooks.onActivity?.();
  }

  /** Wake the downloader's wait (the run's switches changed). */
  notify(): void {
    this.#activity.notify();
  }

  /** Until the next activity or `untilMs`, whichever is first. */
  wait(untilMs: number): Promise<void> {
    return this.#activity.wait(untilMs);
  }

  /** A followed folder brought a new input (run/follow.ts). */
  found(e: Omit<FoundEvent, 'type' | 'atMs'>): void {
    this.hooks.onEvent?.({ type: 'found', ...e, input: slash(e.input), atMs: clock.now() });
  }

  /** A spending guard tripped. */
  limit(trip: GuardTrip): void {
    this.hooks.onEvent?.({ type: 'limit', guard: trip.guard, message: trip.message, atMs: clock.now() });
  }

  /** The run's last event. */
  summary(e: SummaryEvent): void {
    this.hooks.onEvent?.(e);
  }

  /** Send what happened since the last pull. Cheap when nothing did: one primary-key range probe. */
  pull(): void {
    const emit = this.hooks.onEvent;
    if (!emit || this.mark === undefined) return;
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
        emit({
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

/** Sleep until a time on the clock or until someone calls notify(), whichever is first. */
class Notifier {
  private waiters: (() => void)[] = [];

  notify(): void {
    const ws = this.waiters;
    this.waiters = [];
    for (const w of ws) w();
  }

  wait(untilMs: number): Promise<void> {
    return new Promise<void>((resolve) => {
      let handle: TimerHandle | undefined;
      const done = () => {
        if (handle) clock.clearTimer(handle);
        this.waiters = this.waiters.filter((w) => w !== done);
        resolve();
      };
      this.waiters.push(done);
      if (Number.isFinite(untilMs)) handle = clock.setTimer(done, Math.max(0, untilMs - clock.now()));
    });
  }
}
