import { setMaxListeners } from 'node:events';
import { clock, type TimerHandle } from '../clock.js';
import type { Ledger, LedgerStatus } from '../ledger/index.js';
import { LOG_ONLY, type Logger } from '../log.js';
import { type ApiError, EXIT, type ExitCode, LedgerMovedError } from '../errors.js';

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

/** After an interrupt, how long calls and downloads in flight may take before they are aborted too. */
const GRACE_MS = 2000;

/**
 * The run's stop state, owned here and changed only through these methods: the switches the
 * lanes and the downloader obey (`stopped`: no call of any kind; `noCreates`: no new upload or
 * create, paid work goes on), why they were thrown (a halt, an account stop, an interrupt, a
 * crash), the abort of what is in flight once an interrupt's grace is over, and the exit code
 * all of that comes to. Whatever changes a switch wakes every part that waits on them.
 */
export class RunControl {
  /** No call of any kind from now on: an interrupt, an account or config problem, a crash. */
  stopped = false;
  /** No new upload or create: finish polling and downloading what is paid for. */
  noCreates = false;
  #accountStop: AccountStop | undefined;
  #halt: RunHalt | undefined;
  #crash: { readonly err: unknown } | undefined;
  readonly #wakers: (() => void)[] = [];
  readonly #hard = new AbortController();
  #graceTimer: TimerHandle | undefined;

  constructor(
    private readonly ledger: Ledger,
    private readonly log: Logger,
    private readonly graceMs = GRACE_MS,
  ) {
    // Every call and download in flight listens to the abort (clock.deadline): with several
    // keys that is more than the default 10, which would print a leak warning that is not one.
    setMaxListeners(1000, this.#hard.signal);
  }

  /**
   * Aborts calls and downloads in flight: after an interrupt's grace period. Each stage
   * records what the abort left behind (a create sent and aborted is ambiguous, its photo held).
   */
  get abort(): AbortSignal {
    return this.#hard.signal;
  }

  get accountStop(): AccountStop | undefined {
    return this.#accountStop;
  }

  /** The first halt's reason: the one reported. */
  get halt(): RunHalt | undefined {
    return this.#halt;
  }

  /** What a stage, a lane or the downloader threw that it should have classified: a bug, rethrown once the run has stopped. */
  get crash(): { readonly err: unknown } | undefined {
    return this.#crash;
  }

  /** `fn` is called whenever a switch changes (a lane's loop, the downloader's wait). */
  onWake(fn: () => void): void {
    this.#wakers.push(fn);
  }

  /** Everything that waits on the switches looks at them again. */
  wake(): void {
    for (const w of this.#wakers) w();
  }

  /** Stop the run for a config, disk or ledger problem or a limit set (RunHalt); the first reason is the one reported. */
  stop(halt: RunHalt): void {
    this.#halt ??= halt;
    this.noCreates = true;
    if (halt.immediate) this.stopped = true;
    this.wake();
  }

  /** An account problem stops the run: 401 and 24403 at once, 20601 after in-flight work. */
  stopForAccount(err: ApiError): void {
    const creditsOnly = err.businessCode === 20601;
    if (!this.#accountStop || (this.#accountStop.creditsOnly && !creditsOnly)) this.#accountStop = { error: err, creditsOnly };
    this.noCreates = true;
    if (!creditsOnly) this.stopped = true;
    // The command's `stopped: …` line says it to the operator (cli/commands/stops.ts).
    this.log.error(
      { code: err.answer, httpStatus: err.httpStatus, businessCode: err.businessCode, requestId: err.requestId, ...LOG_ONLY },
      err.message,
    );
    this.wake();
  }

  /**
   * A config problem every call would meet (the base URL redirects, api/classify.ts
   * 'stop-config') stops the run at once with exit 2: no call of any kind after it, and no
   * photo failed for it. The stage that met it has already put its item back where it was (a
   * redirect is a definite "not done"). The line names the redirect's target, never the key.
   */
  stopForConfig(err: ApiError): void {
    this.stop({ kind: 'config', code: 'NOT_THE_SERVICE', immediate: true, exitCode: EXIT.usage, message: err.message });
    this.log.error(
      { code: err.answer, httpStatus: err.httpStatus, endpoint: err.endpoint, requestId: err.requestId, ...LOG_ONLY },
      err.message,
    );
  }

  /** An API call's stop: the account's or the config's, as the error says. */
  stopFor(err: ApiError): void {
    if (err.kind === 'stop-config') this.stopForConfig(err);
    else this.stopForAccount(err);
  }

  /**
   * An interrupt: no new calls or downloads at once; what is in flight gets the grace
   * period to finish, then is aborted (each stage records what the abort left behind).
   */
  interrupt(): void {
    this.stopped = true;
    this.wake();
    this.#graceTimer ??= clock.setTimer(() => this.#hard.abort(new Error('interrupted')), this.graceMs);
  }

  /** The caller's signal interrupts the run; returns what unhooks it (the run adds no listener to an aborted signal). */
  follow(signal: AbortSignal | undefined): () => void {
    const onAbort = () => this.interrupt();
    if (signal?.aborted) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
    return () => signal?.removeEventListener('abort', onAbort);
  }

  /** A bug stops the run loudly rather than spin: the first is kept and rethrown at the end. */
  crashed(err: unknown): void {
    this.#crash ??= { err };
    this.stopped = true;
    this.wake();
  }

  /**
   * Checked before every call and download: is the ledger still the file at its path? If it
   * was moved, replaced or deleted, the run stops at once (exit 2), so nothing more is paid
   * for into a ledger the next run will not find; calls already in flight finish and are
   * recorded in the file this process has open. One stat per check. True while work may go ahead.
   */
  ledgerOk(): boolean {
    if (this.#halt?.kind === 'ledger') return false;
    try {
      this.ledger.checkFile();
      return true;
    } catch (err) {
      if (!(err instanceof LedgerMovedError)) throw err;
      this.stop({ kind: 'ledger', message: err.message, exitCode: EXIT.usage, immediate: true });
      this.log.error({ ledger: err.file, change: err.change, ...LOG_ONLY }, err.message);
      return false;
    }
  }

  /**
   * How the run ends, from the ledger's figures: interrupted (130), else the halt's code
   * (a limit reached once nothing was left to start stopped nothing: no halt then — unless
   * the run followed its folder, `following`, where more was always to come), else the
   * account's (3), else all done (0) or not (1).
   */
  outcome(
    status: LedgerStatus,
    interrupted: boolean,
    following = false,
  ): { readonly exitCode: ExitCode; readonly halt: RunHalt | undefined } {
    const halt = this.#halt?.kind === 'limit' && status.pending === 0 && !following ? undefined : this.#halt;
    if (interrupted) return { exitCode: EXIT.interrupted, halt };
    if (halt) return { exitCode: halt.exitCode, halt };
    if (this.#accountStop) return { exitCode: EXIT.account, halt };
    return { exitCode: status.done === status.total ? EXIT.ok : EXIT.someFailed, halt };
  }

  /** The run is over: no abort after its grace. */
  end(): void {
    if (this.#graceTimer) clock.clearTimer(this.#graceTimer);
  }
}
