/**
 * The limits' spans (their names are spec/scopes.ts'), on their own so the fault config (faults.ts), the limits
 * (limits.ts) and the audit (audit.ts) can all read them without importing each other.
 */

export const MINUTE_MS = 60_000;
export const HOUR_MS = 3_600_000;
