import type { Classification } from './classify.js';
import { type RateLimitInfo, ApiError } from '../errors.js';
import { redact } from '../spec/key.js';

export interface ApiErrorInit {
  classification: Classification;
  endpoint: string;
  method: string;
  sentRequestId: string;
  httpStatus?: number | null;
  businessCode?: number | null;
  requestId?: string | null;
  retryAfterMs?: number | null;
  rateLimit?: RateLimitInfo | null;
  /** The service's own message text, if any. */
  serverMessage?: string | null;
  /** The transport's error code (ECONNREFUSED, UND_ERR_HEADERS_TIMEOUT…), if any. */
  transportCode?: string | null;
  /** A detail that replaces the classification's reason, e.g. naming a redirect target. */
  reason?: string;
  /** Name of the variable that holds the key, for "set a valid key in …". */
  keyEnv?: string;
  /** Strings that must never appear in the error (the API key). */
  secrets?: readonly string[];
}

const DEFAULT_KEY_ENV = 'the variable named by service.apiKeyEnv';

/**
 * Text from the service or the network goes into messages and logs: keep it on one line,
 * short, and free of secrets, whatever the server echoes back.
 */
export function sanitize(text: string, secrets: readonly string[], max = 200): string {
  // Control characters: what a terminal would act on, and line breaks.
  // eslint-disable-next-line no-control-regex
  const controls = /[\x00-\x1f\x7f]+/g;
  const oneLine = redact(text, secrets).replace(controls, ' ').trim();
  return oneLine.length > max ? `${oneLine.slice(0, max - 1)}…` : oneLine;
}

/** The ApiError of a failed call: the classification's words, the call's facts, nothing secret. */
export function apiError(init: ApiErrorInit): ApiError {
  const secrets = init.secrets ?? [];
  const c = init.classification;
  if (c.kind === 'ok') throw new TypeError('ApiError needs an error classification');
  const clean = (s: string | null | undefined, max?: number) => (s == null || s === '' ? null : sanitize(s, secrets, max));

  const httpStatus = init.httpStatus ?? null;
  const businessCode = init.businessCode ?? null;
  const requestId = clean(init.requestId, 128);
  const sentRequestId = sanitize(init.sentRequestId, secrets, 64);
  const serverMessage = clean(init.serverMessage);
  const transportCode = clean(init.transportCode, 64);

  const facts = [`${init.method} ${init.endpoint}`];
  facts.push(httpStatus === null ? 'no HTTP response' : `HTTP ${httpStatus}`);
  if (businessCode !== null) facts.push(`code ${businessCode}`);
  if (transportCode !== null) facts.push(transportCode);
  facts.push(requestId !== null ? `requestId ${requestId}` : `sent X-Request-Id ${sentRequestId}`);
  if (serverMessage !== null) facts.push(`service said "${serverMessage}"`);
  const reason = sanitize(init.reason ?? c.reason, secrets, 300);
  const action = c.action.replace('{keyEnv}', init.keyEnv ?? DEFAULT_KEY_ENV);
  const rl = init.rateLimit ?? null;

  return new ApiError({
    message: `${reason} (${facts.join(', ')}): ${action}`,
    kind: c.kind,
    answer: c.answer,
    httpStatus,
    businessCode,
    requestId,
    sentRequestId,
    retryAfterMs: init.retryAfterMs ?? null,
    rateLimit: rl === null ? null : { ...rl, scope: rl.scope === null ? null : redact(rl.scope, secrets) },
    endpoint: init.endpoint,
    serverMessage,
    transportCode,
  });
}

export function isApiError(e: unknown): e is ApiError {
  return e instanceof ApiError;
}
