/**
 * The one place that decides what an (HTTP status, business code) pair means to darkroom.
 * The spec says several codes share a status, so both are always checked.
 */
import { CODES } from '../spec/codes.js';
import type { ErrorKind } from '../errors.js';

export interface Classification {
  kind: ErrorKind | 'ok';
  /** The answer's class, a stable name for logs, the ledger's call records and tests: RATE_LIMITED, NOT_SUBSCRIBED, … */
  answer: string;
  /** What happened, lower-case, no trailing period. */
  reason: string;
  /** What to do about it. `{keyEnv}` is replaced by the name of the key's variable. */
  action: string;
}

export interface ErrorTableEntry extends Classification {
  httpStatus: number;
  businessCode: number;
}

const OK: Classification = { kind: 'ok', answer: 'OK', reason: 'success', action: 'none' };

const NOT_SUBSCRIBED: Classification = {
  kind: 'stop-account',
  answer: 'NOT_SUBSCRIBED',
  reason: 'the account has no active subscription, or it has expired',
  action: 'renew the subscription on the developer platform, then run again',
};
const INSUFFICIENT_CREDITS: Classification = {
  kind: 'stop-account',
  answer: 'INSUFFICIENT_CREDITS',
  reason: 'the account has not enough credits for this request',
  action: 'add credits to the account, then run again',
};
const BAD_REQUEST: Classification = {
  kind: 'fix-request',
  answer: 'BAD_REQUEST',
  reason: 'the service rejected a parameter',
  action: 'fix the input (image URL, resolution, style) before sending it again',
};
const INVALID_MODE: Classification = {
  kind: 'fix-request',
  answer: 'INVALID_MODE',
  reason: 'the service rejected the mode',
  action: 'use one of general, graphics, portrait, text, on a capability that accepts a mode',
};
const INVALID_KEY: Classification = {
  kind: 'stop-account',
  answer: 'INVALID_KEY',
  reason: 'the key is missing, invalid or inactive',
  action: 'set a valid key in {keyEnv}',
};
const TASK_NOT_FOUND: Classification = {
  kind: 'not-found',
  answer: 'TASK_NOT_FOUND',
  reason: 'the task does not exist for this businessType, has expired, or belongs to another account',
  action: 'check the businessType used for polling; the task cannot be polled any more',
};
const RATE_LIMITED: Classification = {
  kind: 'retry-later',
  answer: 'RATE_LIMITED',
  reason: 'a call-rate or active-task quota was exceeded (nothing was done, no credits used)',
  action: 'wait at least Retry-After, then retry with the same key',
};
const SERVICE_UNAVAILABLE: Classification = {
  kind: 'retry-later',
  answer: 'SERVICE_UNAVAILABLE',
  reason: 'the service is temporarily unavailable',
  action: 'wait at least Retry-After (or back off with jitter), then retry',
};
const SERVER_ERROR: Classification = {
  kind: 'ambiguous',
  answer: 'SERVER_ERROR',
  reason: 'the service failed unexpectedly',
  action: 'a create may still have made a task: hold it, do not resend; a read can be retried',
};

/**
 * Every pair of the spec's error tables. 24403 appears twice: the error table says HTTP
 * 400, the published create examples show it inside HTTP 200.
 */
export const ERROR_TABLE: readonly ErrorTableEntry[] = [
  { httpStatus: 200, businessCode: CODES.OK, ...OK },
  { httpStatus: 200, businessCode: CODES.NOT_SUBSCRIBED, ...NOT_SUBSCRIBED },
  { httpStatus: 400, businessCode: CODES.NOT_SUBSCRIBED, ...NOT_SUBSCRIBED },
  { httpStatus: 400, businessCode: CODES.NO_CREDITS, ...INSUFFICIENT_CREDITS },
  { httpStatus: 400, businessCode: CODES.PARAM, ...BAD_REQUEST },
  { httpStatus: 400, businessCode: CODES.INVALID_MODE, ...INVALID_MODE },
  { httpStatus: 401, businessCode: CODES.GENERAL, ...INVALID_KEY },
  { httpStatus: 404, businessCode: CODES.TASK_NOT_FOUND, ...TASK_NOT_FOUND },
  { httpStatus: 429, businessCode: CODES.BUSY, ...RATE_LIMITED },
  { httpStatus: 503, businessCode: CODES.BUSY, ...SERVICE_UNAVAILABLE },
  { httpStatus: 500, businessCode: CODES.GENERAL, ...SERVER_ERROR },
];

/**
 * Business codes whose meaning does not depend on the status, used when a known code
 * arrives with a 2xx or an unlisted 4xx (the spec's own 24403-in-200 shows the status
 * cannot be trusted alone). -1 is absent: it means "key" with 401 and "server" with 500.
 */
const BY_CODE: ReadonlyMap<number, Classification> = new Map([
  [CODES.NOT_SUBSCRIBED, NOT_SUBSCRIBED],
  [CODES.NO_CREDITS, INSUFFICIENT_CREDITS],
  [CODES.PARAM, BAD_REQUEST],
  [CODES.INVALID_MODE, INVALID_MODE],
  [CODES.TASK_NOT_FOUND, TASK_NOT_FOUND],
  [
    CODES.BUSY,
    {
      kind: 'retry-later',
      answer: 'SERVICE_BUSY',
      reason: 'the service is busy (nothing was done, no credits used)',
      action: 'wait at least Retry-After (or back off with jitter), then retry',
    },
  ],
]);

/** Something may have happened that darkroom cannot see: never resend a create over it. */
function ambiguous(answer: string, reason: string): Classification {
  return { kind: 'ambiguous', answer, reason, action: 'a create may have made a task: hold it, do not resend; a read can be retried' };
}

/**
 * Any 3xx from the API: the base URL is not the service's final address. darkroom never
 * follows it (the x-api-key header would travel to wherever it points, L5), and it is no
 * fault of any photo: every later call would meet it too. The answer is a redirect, not the
 * service's, so the call was not performed (an upload stays to do, a create was not made).
 */
export const REDIRECT_REFUSED: Classification = {
  kind: 'stop-config',
  answer: 'REDIRECT_REFUSED',
  reason: 'the base URL redirects, which darkroom never follows',
  action: 'set service.baseUrl to the final URL (darkroom never follows a redirect: the key would travel with it)',
};

/**
 * REDIRECT_REFUSED's reason for one answer, naming where it points: the Location's origin
 * and path, never its query, fragment or user info (a token, perhaps the key, could ride there).
 */
export function redirectReason(httpStatus: number, location: string | null, requestUrl: string): string {
  if (location === null || location.trim() === '') return `the base URL answered a redirect (HTTP ${httpStatus}) without a Location`;
  let target: URL;
  try {
    target = new URL(location, requestUrl);
  } catch {
    return `the base URL answered a redirect (HTTP ${httpStatus}) to an unreadable Location`;
  }
  if (target.protocol !== 'http:' && target.protocol !== 'https:') return `the base URL redirects to a ${target.protocol} address`;
  return `the base URL redirects to ${target.origin}${target.pathname}`;
}

export const MALFORMED_RESPONSE: Classification = ambiguous(
  'MALFORMED_RESPONSE',
  'the service answered success with a body darkroom cannot read',
);

const UNEXPECTED_CODE: Classification = ambiguous('UNEXPECTED_CODE', 'the service answered HTTP success with an unknown business code');
const FORBIDDEN: Classification = {
  kind: 'stop-account',
  answer: 'FORBIDDEN',
  reason: 'the service refused the key access',
  action: 'check the account and the key in {keyEnv}',
};
const REQUEST_TIMEOUT: Classification = {
  kind: 'retry-later',
  answer: 'REQUEST_TIMEOUT',
  reason: 'the service timed out reading the request (it was not processed)',
  action: 'retry later',
};
/** A 404 page that is not the API's (no envelope): not performed; the service is not reached. */
const NOT_THE_API: Classification = {
  kind: 'retry-later',
  answer: 'NOT_THE_API',
  reason: "the answer is not the service's (HTTP 404 without the API's envelope: a proxy or another server answered)",
  action: 'retry later; if it lasts, check service.baseUrl',
};
const UNEXPECTED_STATUS: Classification = ambiguous('UNEXPECTED_STATUS', 'the service answered with an unexpected HTTP status');

export const NOT_SENT: Classification = {
  kind: 'not-sent',
  answer: 'NOT_SENT',
  reason: 'the request was not sent',
  action: 'safe to retry: the service never received it',
};
export const OUTCOME_UNKNOWN: Classification = ambiguous('OUTCOME_UNKNOWN', 'the request was sent but no complete answer came back');

function exact(httpStatus: number, businessCode: number | null): ErrorTableEntry | undefined {
  return ERROR_TABLE.find((e) => e.httpStatus === httpStatus && e.businessCode === businessCode);
}

/**
 * Map a response to its kind. `businessCode` is null when the body carried no readable
 * envelope. Pairs outside the spec's table, in order:
 *
 * - 3xx: stop-config (redirects are never followed: the key must not travel; the base URL is wrong).
 * - 401, any code: stop-account, invalid key (the spec gives 401 one meaning).
 * - 429, any code: retry-later (the spec: rejected, nothing consumed).
 * - 2xx or 4xx with a code of fixed meaning (BY_CODE): that meaning.
 * - 2xx with code 0: ok. 2xx with no envelope: ambiguous, malformed. 2xx with any other
 *   code: ambiguous (something was reported that darkroom does not understand; a create
 *   may have happened).
 * - 403: stop-account (a refusal that every later call would share); 404: not-found
 *   (without an envelope: retry-later, NOT_THE_API: the service never saw it);
 *   408: retry-later (the server gave up reading, so did nothing); other 4xx: fix-request.
 * - 503, any code: retry-later (a protective service refused the call).
 * - other 5xx (500 with another code, 502, 504…): ambiguous; a gateway may have passed
 *   the request on before failing.
 * - anything else (1xx, ≥600): ambiguous.
 */
export function classify(httpStatus: number, businessCode: number | null): Classification {
  const hit = exact(httpStatus, businessCode);
  if (hit) return hit;

  if (httpStatus >= 300 && httpStatus < 400) return REDIRECT_REFUSED;
  if (httpStatus === 401) return INVALID_KEY;
  if (httpStatus === 429) return RATE_LIMITED;

  const is2xx = httpStatus >= 200 && httpStatus < 300;
  const is4xx = httpStatus >= 400 && httpStatus < 500;
  if ((is2xx || is4xx) && businessCode !== null) {
    const byCode = BY_CODE.get(businessCode);
    if (byCode) return byCode;
  }
  if (is2xx) {
    if (businessCode === 0) return OK;
    return businessCode === null ? MALFORMED_RESPONSE : UNEXPECTED_CODE;
  }
  if (is4xx) {
    if (httpStatus === 403) return FORBIDDEN;
    // The service's 404 always carries -60404; a page without its envelope came from
    // something in front of it (a proxy, a wrong path), which did nothing with the request.
    if (httpStatus === 404) return businessCode === null ? NOT_THE_API : TASK_NOT_FOUND;
    if (httpStatus === 408) return REQUEST_TIMEOUT;
    return BAD_REQUEST;
  }
  if (httpStatus === 503) return SERVICE_UNAVAILABLE;
  if (httpStatus >= 500 && httpStatus < 600) return SERVER_ERROR;
  return UNEXPECTED_STATUS;
}

/**
 * Did the service itself answer? What decides whether a base URL is the API (at a run's
 * first contact, run/serviceContact.ts) and whether the service is out (mid-run):
 * - 'api': a response carrying the API's envelope (`businessCode` not null), whatever its status;
 * - 'no-answer': no response (refused, DNS, TLS, timeout, reset), or a 5xx without the
 *   envelope (a gateway in front of a service that is down): may pass;
 * - 'not-api': any other response without the envelope (a 404 or 200 HTML page, a
 *   redirect): another server answers at this address, which waiting will not change.
 */
export type ServiceAnswer = 'api' | 'no-answer' | 'not-api';

export function serviceAnswer(httpStatus: number | null, businessCode: number | null): ServiceAnswer {
  if (httpStatus === null) return 'no-answer';
  if (businessCode !== null) return 'api';
  if (httpStatus >= 500 && httpStatus < 600) return 'no-answer';
  return 'not-api';
}
