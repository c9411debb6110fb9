import type { Liveness } from './owners.js';

/* What a key's budget (keyBudget.ts) is told, shared by the parts it is made of. */

export interface KeyLimits {
  readonly callsPerMinute: number;
  readonly callsPerHour: number;
  readonly activeTasks: number;
}

export interface KeyBudgetOptions {
  /** Whose rows these are: the ledger's id, or an account command's one-off id. */
  readonly owner: string;
  readonly limits: KeyLimits;
  /**
   * How long a task may run from its start (src/scheduler/taskBound.ts). `fresh`: the
   * caller holds slots it can only guess about and wants the latest observations.
   */
  readonly taskBoundMs: (fresh?: boolean) => number;
  /** The client's per-call timeout: a create may be accepted until its client gives up. Default 30 s. */
  readonly callTimeoutMs?: number;
  readonly marginMs?: number;
  /** Places in each window only creates may take (CallBudget). Default 3. */
  readonly createReserve?: number;
  /** Whether another owner's process still runs; default: by pid, on this host. */
  readonly liveness?: Liveness;
}

/** A create may be accepted until its client gives up on the request. */
export const callTimeoutMs = (o: KeyBudgetOptions): number => o.callTimeoutMs ?? 30_000;

/** Places in each window only creates may take. */
export const createReserve = (o: KeyBudgetOptions): number => o.createReserve ?? 3;
