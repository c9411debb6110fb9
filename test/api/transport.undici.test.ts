import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ApiClient } from '../../src/api/client.js';
import { ApiError, TransportError } from '../../src/errors.js';
import { undiciTransport } from '../../src/api/transport.js';
import { CANARY_KEY } from './fakes.js';

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: Buffer;
}

interface TestServer {
  url: string;
  seen: Seen[];
  close(): Promise<void>;
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** An HTTP server on 127.0.0.1, port 0, recording every request it reads. */
async function serve(handler: (req: IncomingMessage, res: ServerResponse, body: Buffer) => void): Promise<TestServer> {
  const seen: Seen[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      handler(req, res, body);
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const ts: TestServer = {
    url: `http://127.0.0.1:${port}`,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
  cleanups.push(ts.close);
  return ts;
}

function transport(opts: Parameters<typeof undiciTransport>[0] = {}) {
  const t = undiciTransport(opts);
  cleanups.push(() => t.close());
  return t;
}

async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (e) {
    return e;
  }
  throw new Error('expected a rejection');
}

/** A port that was just free: nothing listens there. */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

describe('undiciTransport', () => {
  it('returns status, lower-cased headers and the body', async () => {
    const srv = await serve((req, res, body) => {
      res.setHeader('X-Request-Id', 'srv-1');
      res.setHeader('RateLimit-Scope', 'api_key_minute');
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ echo: body.toString(), key: req.headers['x-api-key'] === CANARY_KEY }));
    });
    const t = transport();
    const res = await t.send({
      method: 'POST',
      url: `${srv.url}/api/v1/x?y=1`,
      headers: { 'x-api-key': CANARY_KEY, 'content-type': 'application/json' },
      body: '{"a":1}',
    });
    expect(res.status).toBe(200);
    expect(res.headers['x-request-id']).toBe('srv-1');
    expect(res.headers['ratelimit-scope']).toBe('api_key_minute');
    expect(JSON.parse(res.body.toString())).toEqual({ echo: '{"a":1}', key: true });
    expect(srv.seen[0]).toMatchObject({ method: 'POST', url: '/api/v1/x?y=1' });
  });

  it('does not follow a 302 to another origin, which never sees a request', async () => {
    const other = await serve((_req, res) => res.end('{"code":0,"data":{}}'));
    const origin = await serve((_req, res) => {
      res.writeHead(302, { Location: `${other.url}/api/v1/credits` });
      res.end();
    });
    const t = transport();
    const res = await t.send({ method: 'GET', url: `${origin.url}/api/v1/credits`, headers: { 'x-api-key': CANARY_KEY } });
    expect(res.status).toBe(302);
    expect(res.headers.location).toBe(`${other.url}/api/v1/credits`);
    expect(origin.seen).toHaveLength(1);
    expect(other.seen).toHaveLength(0);
  });

  it('through the client, the redirect becomes REDIRECT_REFUSED and the key stays home', async () => {
    const other = await serve((_req, res) => res.end('{"code":0,"data":{}}'));
    const origin = await serve((_req, res) => {
      res.writeHead(307, { Location: `${other.url}/api/v1/credits` });
      res.end();
    });
    const client = new ApiClient({ baseUrl: origin.url, apiKey: CANARY_KEY, transport: transport() });
    const e = await rejection(client.credits());
    expect(e).toBeInstanceOf(ApiError);
    expect((e as ApiError).answer).toBe('REDIRECT_REFUSED');
    expect((e as ApiError).kind).toBe('stop-config');
    expect((e as ApiError).message).toContain(`the base URL redirects to ${other.url}/api/v1/credits`);
    expect(other.seen).toHaveLength(0);
  });

  it('connection refused is a TransportError with sent:false', async () => {
    const port = await closedPort();
    const e = await rejection(
      transport().send({ method: 'POST', url: `http://127.0.0.1:${port}/api/v1/enhance/generate`, headers: {}, body: '{}' }),
    );
    expect(e).toBeInstanceOf(TransportError);
    expect((e as TransportError).transportCode).toBe('ECONNREFUSED');
    expect((e as TransportError).sent).toBe(false);
  });

  it('a server that accepts and never answers times out with sent:true', async () => {
    const srv = await serve(() => {
      /* read the request, never answer */
    });
    const t = transport({ headersTimeoutMs: 150 });
    const e = await rejection(t.send({ method: 'POST', url: `${srv.url}/api/v1/enhance/generate`, headers: {}, body: '{"image":"x"}' }));
    expect(e).toBeInstanceOf(TransportError);
    expect((e as TransportError).transportCode).toBe('UND_ERR_HEADERS_TIMEOUT');
    expect((e as TransportError).sent).toBe(true);
    expect(srv.seen).toHaveLength(1);
  });

  it('through the client, the silent server gives an ambiguous create', async () => {
    const srv = await serve(() => {});
    const client = new ApiClient({ baseUrl: srv.url, apiKey: CANARY_KEY, transport: transport({ headersTimeoutMs: 150 }) });
    const e = (await rejection(client.create('enhance', { image: 'https://img/a.jpg' }))) as ApiError;
    expect(e.kind).toBe('ambiguous');
    expect(e.answer).toBe('OUTCOME_UNKNOWN');
    expect(e.transportCode).toBe('UND_ERR_HEADERS_TIMEOUT');
  });

  it('a connection reset after the request was read is sent:true', async () => {
    const srv = await serve((req) => req.socket.destroy());
    const e = await rejection(transport().send({ method: 'POST', url: `${srv.url}/api/v1/enhance/generate`, headers: {}, body: '{}' }));
    expect(e).toBeInstanceOf(TransportError);
    expect((e as TransportError).sent).toBe(true);
  });

  it('an abort signalled before sending is sent:false', async () => {
    const srv = await serve((_req, res) => res.end('{}'));
    const ac = new AbortController();
    ac.abort(new Error('stop'));
    const e = await rejection(transport().send({ method: 'POST', url: `${srv.url}/x`, headers: {}, body: '{}', signal: ac.signal }));
    expect(e).toBeInstanceOf(TransportError);
    expect((e as TransportError).sent).toBe(false);
    expect(srv.seen).toHaveLength(0);
  });

  it('an abort after the request was written is sent:true', async () => {
    const srv = await serve(() => {});
    const ac = new AbortController();
    const p = transport().send({ method: 'POST', url: `${srv.url}/x`, headers: {}, body: '{}', signal: ac.signal });
    while (srv.seen.length === 0) await new Promise((r) => setImmediate(r));
    ac.abort(new Error('deadline'));
    const e = await rejection(p);
    expect(e).toBeInstanceOf(TransportError);
    expect((e as TransportError).transportCode).toBe('ABORTED');
    expect((e as TransportError).sent).toBe(true);
  });

  it('sends the multipart upload intact', async () => {
    const srv = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ code: 0, message: 'ok', data: { imageUrl: 'https://img/u.png' }, requestId: 'r1' }));
    });
    const client = new ApiClient({ baseUrl: srv.url, apiKey: CANARY_KEY, transport: transport() });
    const bytes = Buffer.from([0, 1, 2, 13, 10, 45, 45, 255]);
    expect(await client.upload(bytes, 'a.png', 'image/png')).toEqual({ imageUrl: 'https://img/u.png' });
    const req = srv.seen[0]!;
    expect(req.headers['x-api-key']).toBe(CANARY_KEY);
    const form = await new Response(req.body, { headers: { 'content-type': req.headers['content-type']! } }).formData();
    expect(Buffer.from(await (form.get('image') as File).arrayBuffer()).equals(bytes)).toBe(true);
  });
});

describe('undiciTransport limits', () => {
  it('refuses an oversized response body, as possibly sent', async () => {
    const srv = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(Buffer.alloc(64 * 1024, 0x20));
    });
    const e = await rejection(transport({ maxResponseBytes: 1024 }).send({ method: 'GET', url: `${srv.url}/x`, headers: {} }));
    expect(e).toBeInstanceOf(TransportError);
    expect((e as TransportError).sent).toBe(true);
  });
});
