import { DarkroomError } from '../errors.js';
import type { SummaryEvent } from '../run/events.js';

/** The run's ending figures: the `summary` event of `run --json`, less its type. */
export interface RunSummary extends Omit<SummaryEvent, 'type'> {
  /** The caller's signal stopped the run: nothing new was started, `pending` photos wait for the next run. */
  readonly interrupted: boolean;
}

/**
 * A run that stopped for a problem a rerun cannot get past until it is fixed (the account,
 * the job, the output folder, the ledger moved): its code, and the figures it left in
 * `summary` (the ledger is consistent; a later run continues once the cause is fixed).
 */
export class RunStoppedError extends DarkroomError {
  override readonly name = 'RunStoppedError';
  constructor(
    code: 'ACCOUNT' | 'CONFIG' | 'OUTPUT' | 'LEDGER_MOVED',
    message: string,
    /** The ledger's figures when the run stopped. */
    readonly summary: RunSummary,
    cause?: unknown,
  ) {
    super(code, message, { cause });
  }
}

