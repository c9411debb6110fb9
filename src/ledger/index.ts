export { Ledger } from './ledger.js';
export { LedgerMissingError } from './open.js';
export { LedgerTooNewError } from './migrate.js';
export { StaleStateError, type Discovered } from './items.js';
export type { ItemRow, SubmissionRow, CallRow } from './rows.js';
export type { LedgerStatus, ProblemItem } from './status.js';
export type { RecoveryReport } from './recover.js';
export { STATES, TERMINAL, canTransition, InvalidTransitionError, type ItemState } from './transitions.js';
export { acquireRunLock, LedgerBusyError } from './lock.js';
