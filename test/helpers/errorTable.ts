/**
 * The spec's error table, written out by hand (not read from src/api/classify.ts) so that a
 * wrong entry there fails: HTTP status, business code, the kind and code darkroom gives it.
 */
export const SPEC_ERRORS = [
  [200, 0, 'ok', 'OK'],
  [200, 24403, 'stop-account', 'NOT_SUBSCRIBED'],
  [400, 24403, 'stop-account', 'NOT_SUBSCRIBED'],
  [400, 20601, 'stop-account', 'INSUFFICIENT_CREDITS'],
  [400, -2, 'fix-request', 'BAD_REQUEST'],
  [400, -3, 'fix-request', 'INVALID_MODE'],
  [401, -1, 'stop-account', 'INVALID_KEY'],
  [404, -60404, 'not-found', 'TASK_NOT_FOUND'],
  [429, -1000, 'retry-later', 'RATE_LIMITED'],
  [503, -1000, 'retry-later', 'SERVICE_UNAVAILABLE'],
  [500, -1, 'ambiguous', 'SERVER_ERROR'],
] as const satisfies ReadonlyArray<readonly [number, number, string, string]>;

/** The pairs that are errors (an HTTP error status). */
export const SPEC_ERROR_STATUSES = SPEC_ERRORS.filter(([status]) => status >= 400);
