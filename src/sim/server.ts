/**
 * The model served over HTTP: the API origin and the result/upload origin on separate
 * ports, as the real service keeps its CDN apart from its API — which is what lets the
 * audit notice a client sending its key to a result URL.
 *
 * Injected faults that live on the socket are carried out here, as the model signals them:
 * `drop` closes the connection without a byte written (the request was read in full),
 * `delayMs` holds the answer on the clock (a VirtualClock holds it until advanced), and
 * `truncated` sends headers declaring the full length, part of the body, then closes.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { clock } from '../clock.js';
import { SimModel } from './model.js';
import type { SimOptions } from './options.js';
import type { SimRequest, SimResponse } from './responses.js';

/** Past this the connection is dropped unread; the model answers oversize uploads below it. */
const MAX_BODY_BYTES = 64 * 1024 * 1024;

export interface StartSimOptions extends Omit<SimOptions, 'resultOrigin'> {
  /** Default 127.0.0.1: the simulator is a local tool and never listens on other interfaces by default. */
  host?: string;
  /** API port; 0 (default) picks any free port. */
  port?: number;
  /** Result/upload port; 0 (default) picks any free port. */
  resultPort?: number;
}

export interface RunningSim {
  apiUrl: string;
  resultUrl: string;
  model: SimModel;
  /**
   * An outage of the API origin (tests): stop listening and drop its connections, so every
   * new call is refused, until `resumeApi` listens again on the same port. The model and the
   * result origin go on (tasks keep running).
   */
  suspendApi(): Promise<void>;
  resumeApi(): Promise<void>;
  close(): Promise<void>;
}

export async function startSim(opts: StartSimOptions): Promise<RunningSim> {
  const { host = '127.0.0.1', port = 0, resultPort = 0, ...modelOpts } = opts;
  let model: SimModel | undefined;
  // Aborted by close(): answers held back by a slow-answer fault are then dropped, not kept waiting.
  const shutdown = new AbortController();
  // The result origin must be listening before the model exists: its URL is part of the model.
  const resultServer = http.createServer(handlerFor((req) => model!.handleResult(req), shutdown.signal));
  const resultAddr = await listen(resultServer, host, resultPort);
  const resultUrl = `http://${hostForUrl(host)}:${resultAddr.port}`;
  try {
    model = new SimModel({ ...modelOpts, resultOrigin: resultUrl });
  } catch (err) {
    await closeServer(resultServer);
    throw err;
  }
  const apiServer = http.createServer(handlerFor((req) => model!.handleApi(req), shutdown.signal));
  let apiAddr: AddressInfo;
  try {
    apiAddr = await listen(apiServer, host, port);
  } catch (err) {
    await closeServer(resultServer);
    throw err;
  }
  let closing: Promise<void> | undefined;
  return {
    apiUrl: `http://${hostForUrl(host)}:${apiAddr.port}`,
    resultUrl,
    model,
    suspendApi: () => closeServer(apiServer),
    resumeApi: async () => {
      if (!apiServer.listening) await listen(apiServer, host, apiAddr.port);
    },
    close() {
      shutdown.abort(new Error('simulator closed'));
      closing ??= Promise.all([closeServer(apiServer), closeServer(resultServer)]).then(() => undefined);
      return closing;
    },
  };
}

function handlerFor(handle: (req: SimRequest) => Promise<SimResponse>, shutdown: AbortSignal): http.RequestListener {
  return (req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let dropped = false;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        dropped = true;
        req.destroy();
        res.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('error', () => res.destroy());
    req.on('end', () => {
      if (dropped) return;
      const headers: Record<string, string | undefined> = {};
      for (const [name, value] of Object.entries(req.headers)) {
        headers[name] = Array.isArray(value) ? value.join(', ') : value;
      }
      const simReq: SimRequest = {
        method: req.method ?? 'GET',
        path: req.url ?? '/',
        headers,
        body: Buffer.concat(chunks),
      };
      handle(simReq)
        .then(async (out) => {
          if (out.drop) {
            res.destroy();
            return;
          }
          if (out.delayMs !== undefined && out.delayMs > 0) {
            try {
              await clock.sleep(out.delayMs, shutdown);
            } catch {
              res.destroy();
              return;
            }
            if (res.destroyed) return; // the client gave up waiting
          }
          // A HEAD answer, or a truncated one, carries the length of a body it does not send whole.
          const length = out.headers['content-length'] ?? String(out.body.length);
          res.writeHead(out.status, { ...out.headers, 'content-length': length });
          if (out.truncated) {
            res.write(out.body, () => res.destroy());
            return;
          }
          res.end(out.body);
        })
        .catch(() => {
          if (res.headersSent) {
            res.destroy();
            return;
          }
          res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
          res.end('internal error\n');
        });
    });
  };
}

function listen(server: http.Server, host: string, port: number): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error) => reject(err);
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve(server.address() as AddressInfo);
    });
  });
}

function closeServer(server: http.Server): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) {
      resolve();
      return;
    }
    server.close(() => resolve());
    // close() alone waits for idle keep-alive sockets, which a pooled client holds open.
    server.closeAllConnections();
  });
}

function hostForUrl(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}
