/**
 * The seam between the client and the wire. The client needs one fact beyond the
 * response: when a call fails, could the request have reached the service? Creates are
 * not idempotent, so that fact decides between "retry" and "hold" (L2).
 */
import { Agent, type Dispatcher } from 'undici';

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

export class TransportError extends Error {
  override readonly name = 'TransportError';
  /** ECONNREFUSED, UND_ERR_HEADERS_TIMEOUT, ABORTED, … */
  readonly code: string;
  /**
   * false: the request was definitely not written (connection refused, DNS, connect
   * timeout, aborted before a connection). true: it may have reached the service.
   */
  readonly sent: boolean;

  constructor(message: string, code: string, sent: boolean) {
    super(message);
    this.code = code;
    this.sent = sent;
  }
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

interface CallState {
  dispatched: boolean;
}

/**
 * An interceptor that notes when undici hands the request to a connected socket
 * (onRequestStart: the legacy onConnect, called just before the request is written).
 * State travels by the request's own options object, which undici passes through.
 */
function dispatchTracker(states: WeakMap<object, CallState>): Dispatcher.DispatcherComposeInterceptor {
  return (dispatch) => (opts, handler) => {
    const state = states.get(opts);
    if (!state) return dispatch(opts, handler);
    const signal = (opts as { signal?: AbortSignal }).signal;
    const wrapped: Dispatcher.DispatchHandler = {
      onRequestStart(controller, context) {
        // An already-aborted request is cancelled here, unwritten.
        if (!signal?.aborted) state.dispatched = true;
        handler.onRequestStart?.(controller, context);
      },
      onRequestUpgrade(controller, statusCode, headers, socket) {
        handler.onRequestUpgrade?.(controller, statusCode, headers, socket);
      },
      onResponseStart(controller, statusCode, headers, statusMessage) {
        handler.onResponseStart?.(controller, statusCode, headers, statusMessage);
      },
      onResponseData(controller, chunk) {
        handler.onResponseData?.(controller, chunk);
      },
      onResponseEnd(controller, trailers) {
        handler.onResponseEnd?.(controller, trailers);
      },
      onResponseError(controller, error) {
        handler.onResponseError?.(controller, error);
      },
    };
    return dispatch(opts, wrapped);
  };
}

function flattenHeaders(raw: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(raw)) {
    if (v === undefined) continue;
    out[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : v;
  }
  return out;
}

export interface UndiciTransportOptions {
  /** Default 10 s. */
  connectTimeoutMs?: number;
  /** Time allowed for the response headers once the request is sent; default 60 s. */
  headersTimeoutMs?: number;
  /** Longest gap between body chunks; default 60 s. */
  bodyTimeoutMs?: number;
  /** Connections per origin; default 8. */
  connections?: number;
  /** Largest response body accepted; default 16 MiB (the service answers small JSON). */
  maxResponseBytes?: number;
}

/**
 * undici's `request` on a private Agent. undici 7's request API has no redirect
 * following unless a redirect interceptor is composed in, and none is: a 3xx comes back
 * as a response. (Fetch-style clients follow it and carry x-api-key to the new origin.)
 */
export function undiciTransport(opts: UndiciTransportOptions = {}): Transport & { close(): Promise<void> } {
  const agent = new Agent({
    connectTimeout: opts.connectTimeoutMs ?? 10_000,
    headersTimeout: opts.headersTimeoutMs ?? 60_000,
    bodyTimeout: opts.bodyTimeoutMs ?? 60_000,
    connections: opts.connections ?? 8,
    maxResponseSize: opts.maxResponseBytes ?? 16 * 1024 * 1024,
  });
  const states = new WeakMap<object, CallState>();
  const dispatcher = agent.compose(dispatchTracker(states));

  return {
    async send(req: WireRequest): Promise<WireResponse> {
      const state: CallState = { dispatched: false };
      let url: URL;
      try {
        url = new URL(req.url);
      } catch (err) {
        throw toTransportError(err, false, false);
      }
      const options: Dispatcher.RequestOptions = {
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method: req.method,
        headers: req.headers,
        body: req.body ?? null,
        signal: req.signal ?? null,
        // POSTs are not idempotent: never let a connection pipeline or replay them.
        idempotent: req.method === 'GET',
      };
      states.set(options, state);
      try {
        const res = await dispatcher.request(options);
        const body = Buffer.from(await res.body.arrayBuffer());
        return {
          status: res.statusCode,
          headers: flattenHeaders(res.headers as Record<string, string | string[] | undefined>),
          body,
        };
      } catch (err) {
        throw toTransportError(err, state.dispatched, req.signal?.aborted ?? false);
      }
    },
    close: () => agent.close(),
  };
}
