/**
 * The client's transport over undici (the seam's types are in src/spec/wire.ts).
 */
import { Agent, type Dispatcher } from 'undici';
import { toTransportError, type Transport, type WireRequest, type WireResponse } from '../spec/wire.js';

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
