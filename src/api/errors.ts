import type { Classification, ErrorKind } from './classify.js';
import type { RateLimitInfo } from './headers.js';
import { redact } from '../spec/key.js';

export type { ErrorKind } from './classify.js';

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
  // eslint-disable-next-line no-control-regex
  const oneLine = redact(text, secrets).replace(/[\x00-\x1f\x7f]+/g, ' ').trim();
  return oneLine.length > max ? `${oneLine.slice(0, max - 1)}…` : oneLine;
}

export class ApiError extends Error {
  override readonly name = 'ApiError';
  readonly code: string;
  readonly kind: ErrorKind;
  readonly httpStatus: number | null;
  readonly businessCode: number | null;
  /** The service's requestId (body or X-Request-Id header): its handle for support. */
  readonly requestId: string | null;
  /** The X-Request-Id darkroom sent (recorded before sending, L1). */
  readonly sentRequestId: string;
  readonly retryAfterMs: number | null;
  readonly rateLimit: RateLimitInfo | null;
  /** Path template, e.g. /api/v1/tasks/{businessType}/{taskId}. */
  readonly endpoint: string;
  readonly serverMessage: string | null;
  readonly transportCode: string | null;

  constructor(init: ApiErrorInit) {
    const secrets = init.secrets ?? [];
    const c = init.classification;
    if (c.kind === 'ok') throw new TypeError('ApiError needs an error classification');
    const clean = (s: string | null | undefined, max?: number) =>
      s == null || s === '' ? null : sanitize(s, secrets, max);

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

    super(`${reason} (${facts.join(', ')}): ${action}`);
    this.code = c.code;
    this.kind = c.kind;
    this.httpStatus = httpStatus;
    this.businessCode = businessCode;
    this.requestId = requestId;
    this.sentRequestId = sentRequestId;
    this.retryAfterMs = init.retryAfterMs ?? null;
    const rl = init.rateLimit ?? null;
    this.rateLimit = rl === null ? null : { ...rl, scope: rl.scope === null ? null : redact(rl.scope, secrets) };
    this.endpoint = init.endpoint;
    this.serverMessage = serverMessage;
    this.transportCode = transportCode;
  }
}

export function isApiError(e: unknown): e is ApiError {
  return e instanceof ApiError;
}
