/**
 * The wire between a client and the service, as both sides see it: a request, its answer,
 * and the one fact a failed call must carry beyond them: could the request have reached
 * the service? Creates are not idempotent, so that fact decides between "retry" and
 * "hold" (L2). The client's undici transport (src/api/transport.ts) and the simulator's
 * in-process one (src/sim/inprocess.ts) both implement `Transport`.
 */
import { TransportError } from '../errors.js';

export interface WireRequest {
  method: 'GET' | 'POST';
  url: string;
  headers: Record<string, string>;
  body?: Buffer | string;
  /** Implementations must honour it: the client's per-call deadline rides on it. */
  signal?: AbortSignal;
}

export interface WireResponse {
  status: number;
  /** Names lower-cased; repeated headers joined with ", ". */
  headers: Record<string, string>;
  body: Buffer;
}

export interface Transport {
  /** Resolves with any HTTP response, 3xx included (never followed); rejects with TransportError. */
  send(req: WireRequest): Promise<WireResponse>;
}

/** Failures that can only happen before a connection exists. */
const NEVER_SENT = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EAI_FAIL',
  'EAI_NONAME',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
  'UND_ERR_CONNECT_TIMEOUT',
  'ERR_INVALID_URL',
  'UND_ERR_INVALID_ARG',
]);

/** Failures that can only happen once the request is on the socket. */
const ALWAYS_SENT = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH']);

function errorCode(err: unknown): string {
  if (err && typeof err === 'object') {
    const code = (err as { code?: unknown }).code;
    if (typeof code === 'string' && code !== '') return code;
    // net's autoSelectFamily reports every failed address in an AggregateError.
    const inner = (err as { errors?: unknown }).errors;
    if (Array.isArray(inner) && inner.length > 0) return errorCode(inner[0]);
    if ((err as { name?: unknown }).name === 'AbortError') return 'ABORTED';
  }
  return 'UNKNOWN';
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * Decide `sent` from what we saw (`dispatched`: undici handed the request to a connected
 * socket) and, where the code settles it regardless, from the error code.
 */
export function toTransportError(err: unknown, dispatched: boolean, aborted: boolean): TransportError {
  if (err instanceof TransportError) return err;
  let code = errorCode(err);
  if (aborted && (code === 'UNKNOWN' || code === 'UND_ERR_ABORTED')) code = 'ABORTED';
  let sent: boolean;
  if (NEVER_SENT.has(code)) sent = false;
  else if (ALWAYS_SENT.has(code)) sent = true;
  else sent = dispatched; // ECONNRESET, EPIPE, UND_ERR_SOCKET, aborts: depends on when
  const what = sent ? 'after the request was sent' : 'before the request was sent';
  return new TransportError(`${code} ${what}: ${errorMessage(err)}`, code, sent);
}
