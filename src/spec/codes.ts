/**
 * The spec's business codes (the envelope's `code`), named once: the client classifies
 * by them (src/api/classify.ts) and the simulator answers with them. The spec gives
 * several codes one HTTP status and one code several statuses, so both are always read.
 */
export const CODES = {
  OK: 0,
  /** 401: the key is invalid; 500: the service failed. */
  GENERAL: -1,
  PARAM: -2,
  INVALID_MODE: -3,
  /** 429 rate limited, 503 busy: nothing was done. */
  BUSY: -1000,
  NOT_SUBSCRIBED: 24403,
  NO_CREDITS: 20601,
  TASK_NOT_FOUND: -60404,
} as const;
