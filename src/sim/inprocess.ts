import { toTransportError, type Transport, type WireRequest, type WireResponse } from '../spec/wire.js';
import { clock } from '../clock.js';
import type { SimModel } from './model.js';

/**
 * The model as an API transport, with no sockets: the client, scheduler, pipeline and
 * ledger run unmodified against it, so a VirtualClock can drive a whole night's run in
 * seconds and a seed replays it exactly. `intercept` lets a test stand between the two,
 * e.g. to let a create through and then lose its answer.
 *
 * Injected faults reach the client as a network would deliver them: a dropped answer
 * rejects with TransportError ECONNRESET (sent: true); a slow answer waits on the clock
 * and, if the request's signal aborts first, rejects with TransportError ABORTED (sent: true).
 */
export function inProcessTransport(
  model: SimModel,
  intercept?: (req: WireRequest, forward: () => Promise<WireResponse>) => Promise<WireResponse>,
): Transport {
  const forward = async (req: WireRequest): Promise<WireResponse> => {
    const url = new URL(req.url);
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) headers[k.toLowerCase()] = v;
    const body = req.body === undefined ? Buffer.alloc(0) : Buffer.isBuffer(req.body) ? req.body : Buffer.from(req.body);
    const res = await model.handleApi({ method: req.method, path: url.pathname + url.search, headers, body });
    if (res.drop) {
      // What undici reports when the server closes after reading the request: sent, no answer.
      const reset = Object.assign(new Error('socket hang up (the simulator dropped the connection)'), { code: 'ECONNRESET' });
      throw toTransportError(reset, true, false);
    }
    if (res.delayMs !== undefined && res.delayMs > 0) {
      try {
        await clock.sleep(res.delayMs, req.signal);
      } catch (err) {
        // The client's deadline (or its own abort) came first: the request had been sent.
        throw toTransportError(err, true, true);
      }
    }
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(res.headers)) out[k.toLowerCase()] = v;
    return { status: res.status, headers: out, body: res.body };
  };
  return {
    send: (req) => (intercept ? intercept(req, () => forward(req)) : forward(req)),
  };
}

/**
 * The result origin, in-process: what the downloader fetches in a simulation. A truncated
 * download comes back as a body shorter than its content-length header.
 */
export function inProcessResultFetch(model: SimModel) {
  return async (url: URL): Promise<{ status: number; headers: Record<string, string>; body: Buffer }> => {
    const res = await model.handleResult({ method: 'GET', path: url.pathname + url.search, headers: {}, body: Buffer.alloc(0) });
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(res.headers)) headers[k.toLowerCase()] = v;
    return { status: res.status, headers, body: res.body };
  };
}
