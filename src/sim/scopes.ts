/**
 * The limits' names and spans, on their own so the fault config (faults.ts), the limits
 * (limits.ts) and the audit (audit.ts) can all read them without importing each other.
 */

export const MINUTE_MS = 60_000;
export const HOUR_MS = 3_600_000;

/** The scopes a 429 names in its RateLimit-Scope header. */
export const RATE_SCOPES = ['api_key_minute', 'api_key_hour', 'global_minute', 'global_hour', 'api_key_active_tasks'] as const;
export type RateScope = (typeof RATE_SCOPES)[number];
