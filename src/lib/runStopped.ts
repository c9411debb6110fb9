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


