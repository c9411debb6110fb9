import { DarkroomError } from '../errors.js';
import type { SummaryEvent } from '../run/events.js';

/** The run's ending figures: the `summary` event of `run --json`, less its type. */
export interface RunSummary extends Omit<SummaryEvent, 'type'> {
  /**
   * The run was stopped before its end: the caller's signal (or, in an `EVENT_HANDLER`
   * error's summary, the handler's throw) stopped it; nothing new was started, `pending`
   * photos wait for the next run.
   */
  readonly interrupted: boolean;
}

/**
 * Why a run stopped: the account (`ACCOUNT`), the job (`CONFIG`), the base URL
 * (`NOT_THE_SERVICE`, `SERVICE_UNREACHABLE`: the codes `plan()` gives for the same URL),
 * the output folder (`OUTPUT`), the ledger moved (`LEDGER_MOVED`), the caller's `onEvent`
 * threw (`EVENT_HANDLER`).
 */
export type RunStopCode = 'ACCOUNT' | 'CONFIG' | 'NOT_THE_SERVICE' | 'SERVICE_UNREACHABLE' | 'OUTPUT' | 'LEDGER_MOVED' | 'METADATA_TOOL' | 'EVENT_HANDLER';

/**
 * A run that stopped for a problem a rerun cannot get past until it is fixed (the account,
 * the job, the base URL, the output folder, the ledger moved, the caller's event handler):
 * its code, and the figures it left in `summary` (the ledger is consistent; a later run
 * continues once the cause is fixed).
 */
export class RunStoppedError extends DarkroomError {
  override readonly name = 'RunStoppedError';
  constructor(
    code: RunStopCode,
    message: string,
    /** The ledger's figures when the run stopped. */
    readonly summary: RunSummary,
    cause?: unknown,
  ) {
    super(code, message, { cause });
  }
}
