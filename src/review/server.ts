import { randomBytes, timingSafeEqual } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { networkInterfaces } from 'node:os';
import path from 'node:path';
import { clock } from '../clock.js';
import { jsonSafe } from '../display.js';
import { Ledger, type ReviewAction, type ReviewCursor, type ReviewFilter, type ReviewPhoto } from '../ledger/index.js';
import { ReviewError, UsageError } from '../errors.js';
import { PAGE_CSS, PAGE_HTML, PAGE_SCRIPT } from './page.js';
import { NoImage, Previews } from './previews.js';
import { ReviewCounter } from './counts.js';
import { photoJson, type PhotoJson } from './photoJson.js';

/**
 * The review page's server (docs/guide/review.md): node:http, one ledger, no framework. It
 * listens on 127.0.0.1 unless told otherwise and trusts nothing of a request:
 * - the Host header must name the address it listens on (a DNS-rebinding page's requests
 *   carry its own name): else 403;
 * - every request carries the token printed in the address, as `?token=` (the page's first
 *   load, which sets an HttpOnly, SameSite=Strict cookie and sends the browser on to the
 *   address without it) or as that cookie: else 401;
 * - a POST must come from the page's own origin (Origin header) with a JSON body: else 403;
 * - paths are a fixed list of routes; files are found by the ledger's photo id, never by a
 *   path from the request, and a URL with `..`, a backslash or an absolute path in it is 404;
 * - the page may run only its own script (Content-Security-Policy), and every name, caption
 *   and reason reaches it as data, shown as text (docs/names.md).
 * A decision is committed to the ledger (one IMMEDIATE transaction) before its answer is sent.
 */

export interface ReviewServerOptions {
  readonly ledgerFile: string;
  /** ledger.allowNetworkFs of the job. */
  readonly allowNetworkFs?: boolean;
  /** Where the ledger's relative paths resolve (its folder by default). */
  readonly baseDir?: string;
  /** Where previews are kept (default: `.<ledger's name>.previews/` beside it). */
  readonly previewsDir?: string;
  /** Address to listen on (default 127.0.0.1). */
  readonly host?: string;
  /** Port (default 0: a free one). */
  readonly port?: number;
  /** The token (default: 32 random bytes); tests may fix it. */
  readonly token?: string;
}

export interface ReviewServer {
  /** The page's address with its token: `http://127.0.0.1:PORT/?token=…`. */
  readonly url: string;
  readonly host: string;
  readonly port: number;
  readonly token: string;
  /** Stop listening, end open connections, close the ledger. */
  close(): Promise<void>;
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1']);

const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  // The token is in the first address only (the page moves on to `/` at once); nothing is sent
  // to another site. Not no-referrer: under it Chromium leaves out the Origin of the page's own POSTs.
  'Referrer-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
  'Cross-Origin-Opener-Policy': 'same-origin',
};

/** Start the review server over a ledger (which must exist); resolves once it listens. */
export async function startReviewServer(opts: ReviewServerOptions): Promise<ReviewServer> {
  // Read-only first: a ledger that is not there is NO_LEDGER, not a new empty one.
  Ledger.open(opts.ledgerFile, { readonly: true }).close();
  const ledger = Ledger.open(opts.ledgerFile, { allowNetworkFs: opts.allowNetworkFs ?? false });
  const host = opts.host ?? '127.0.0.1';
  const token = opts.token ?? randomBytes(32).toString('base64url');
  const baseDir = opts.baseDir ?? path.dirname(path.resolve(opts.ledgerFile));
  // Hidden: a ledger kept inside input.dir must not have its previews found as photos.
  const ledgerPath = path.resolve(opts.ledgerFile);
  const previews = new Previews(opts.previewsDir ?? path.join(path.dirname(ledgerPath), `.${path.basename(ledgerPath)}.previews`));
  let port = 0;
  let closed: Promise<void> | undefined;
  const counter = new ReviewCounter(ledger);
  // The lists' counts: a first part before the page is served (a small archive's whole), the
  // rest between requests.
  let counting = counter.buildPart();
  const app = { ledger, token, baseDir, previews, hosts: new Set<string>(), cookie: '', counter };
  const server = createServer((req, res) => {
    handle(app, req, res).catch((err: unknown) => {
      if (!res.headersSent) send(res, err instanceof ReviewError ? 409 : 500, 'text/plain', String((err as Error)?.message ?? err));
      else res.destroy();
    });
  });
  // Keep-alive connections would hold close() open: the page polls.
  server.keepAliveTimeout = 5000;
  try {
    port = await listen(server, host, opts.port ?? 0);
  } catch (err) {
    ledger.close();
    throw err;
  }
  void (async () => {
    while (counting && closed === undefined) {
      await clock.yieldTurn();
      if (closed === undefined) counting = counter.buildPart();
    }
  })();
  const names = hostNames(host);
  for (const h of names) app.hosts.add(`${h}:${port}`);
  const shownHost = names[0]!;
  // Cookies are not kept apart by port: two review pages open at once each have their own name.
  app.cookie = `darkroom-review-${port}`;
  return {
    url: `http://${shownHost}:${port}/?token=${token}`,
    host,
    port,
    token,
    close: () =>
      (closed ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }).finally(() => ledger.close())),
  };
}

/**
 * The names a browser may reach the server by, the one to print first: the address listened
 * on; for loopback also `localhost`; for every interface (0.0.0.0, ::) each of this machine's
 * addresses. A Host header naming anything else is refused.
 */
function hostNames(host: string): string[] {
  const bracket = (a: string) => (a.includes(':') ? `[${a}]` : a);
  if (LOOPBACK.has(host)) {
    const first = host === '::1' ? '[::1]' : host;
    return [first, ...['127.0.0.1', 'localhost', '[::1]'].filter((h) => h !== first)];
  }
  if (host === '0.0.0.0' || host === '::') {
    const all = Object.values(networkInterfaces())
      .flat()
      .filter((i) => i !== undefined && (host === '::' || i.family === 'IPv4'));
    const external = all.filter((i) => !i!.internal).map((i) => bracket(i!.address.toLowerCase()));
    return [...external, '127.0.0.1', 'localhost', ...(host === '::' ? ['[::1]'] : [])];
  }
  return [bracket(host.toLowerCase())];
}

function listen(server: Server, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => {
      if (err.code === 'EADDRINUSE')
        reject(new UsageError(`--port ${port}: that port is in use on ${host}; name another, or leave --port out for a free one`));
      else if (err.code === 'EADDRNOTAVAIL' || err.code === 'ENOTFOUND')
        reject(new UsageError(`--host ${host}: this machine has no such address (${err.code})`));
      else if (err.code === 'EACCES') reject(new UsageError(`--port ${port}: not allowed to listen there (EACCES); use a port above 1023`));
      else reject(err);
    };
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

interface App {
  readonly ledger: Ledger;
  readonly counter: ReviewCounter;
  readonly token: string;
  readonly baseDir: string;
  readonly previews: Previews;
  readonly hosts: Set<string>;
  cookie: string;
}

async function handle(app: App, req: IncomingMessage, res: ServerResponse): Promise<void> {
  // DNS rebinding: a page of another site that made its name point here sends its own Host.
  const hostHeader = (req.headers.host ?? '').toLowerCase();
  if (!app.hosts.has(hostHeader)) return send(res, 403, 'text/plain', 'forbidden: this server answers only to its own address');
  const raw = req.url ?? '';
  // Origin-form only ("/…"): an absolute-form target or anything else is no route of ours.
  const url = raw.startsWith('/') && !raw.startsWith('//') ? new URL(raw, 'http://review.invalid') : null;
  const given = url?.searchParams.get('token') ?? null;
  const fromCookie = cookieOf(req, app.cookie);
  if (!matches(given, app.token) && !matches(fromCookie, app.token)) {
    return send(res, 401, 'text/plain', 'unauthorized: open the address `darkroom review` printed, with its token');
  }
  if (url === null || !safePath(raw)) return send(res, 404, 'text/plain', 'not found');
  const extra: Record<string, string> = {};
  if (matches(given, app.token)) {
    extra['Set-Cookie'] = `${app.cookie}=${app.token}; HttpOnly; SameSite=Strict; Path=/`;
    // The page's own address without the token: not left in the address bar or the history.
    if (req.method === 'GET' && url.pathname === '/') return send(res, 303, 'text/plain', 'see /', { ...extra, Location: '/' });
  }
  if (req.method === 'POST') {
    if (!sameOrigin(app, req)) {
      return send(res, 403, 'text/plain', 'forbidden: a change must come from the review page itself');
    }
    if (!/^application\/json\b/i.test(req.headers['content-type'] ?? '')) return send(res, 415, 'text/plain', 'a decision is JSON');
  } else if (req.method !== 'GET' && req.method !== 'HEAD') {
    return send(res, 405, 'text/plain', 'method not allowed', { Allow: 'GET, HEAD, POST' });
  }
  return route(app, req, res, url, extra);
}

async function route(app: App, req: IncomingMessage, res: ServerResponse, url: URL, extra: Record<string, string>): Promise<void> {
  const p = url.pathname;
  const get = req.method !== 'POST';
  if (get && p === '/') return send(res, 200, 'text/html; charset=utf-8', PAGE_HTML, extra);
  if (get && p === '/review.js') return send(res, 200, 'text/javascript; charset=utf-8', PAGE_SCRIPT, extra);
  if (get && p === '/review.css') return send(res, 200, 'text/css; charset=utf-8', PAGE_CSS, extra);
  if (get && p === '/api/photos') {
    const list = listPhotos(app, url.searchParams);
    return list === null ? send(res, 400, 'text/plain', 'no such list or folder') : sendJson(res, 200, list, extra);
  }
  const m = /^\/api\/photos\/(\d{1,15})\/(input|output|decision)$/.exec(p);
  if (!m) return send(res, 404, 'text/plain', 'not found');
  const id = Number(m[1]);
  const photo = app.ledger.reviews.photo(id);
  if (photo === undefined) return send(res, 404, 'text/plain', 'no such photo');
  if (m[2] === 'decision') {
    if (get) return send(res, 405, 'text/plain', 'a decision is a POST', { Allow: 'POST' });
    return decide(app, req, res, id, extra);
  }
  if (!get) return send(res, 405, 'text/plain', 'method not allowed', { Allow: 'GET' });
  const which = m[2] as 'input' | 'output';
  const stored = which === 'input' ? photo.srcPath : photo.state === 'done' ? photo.outputPath : null;
  // A URL input has no file here: the service fetched it.
  if (stored === null || /^[a-z][a-z0-9+.-]*:\/\//i.test(stored)) return send(res, 404, 'text/plain', 'no file');
  try {
    const img = await app.previews.image(path.resolve(app.baseDir, stored), which);
    res.writeHead(200, { ...SECURITY_HEADERS, ...extra, 'Content-Type': img.type, 'Cache-Control': 'private, no-cache' });
    if (req.method === 'HEAD') return void res.end();
    createReadStream(img.file)
      .on('error', () => res.destroy())
      .pipe(res);
  } catch (err) {
    if (err instanceof NoImage) return send(res, err.status, 'text/plain', err.message);
    throw err;
  }
}

/** Photos in one answer at most (the page asks for the next ones as it reaches them). */
const WINDOW = 200;
const MAX_WINDOW = 1000;

const FILTERS = new Set<ReviewFilter>(['unreviewed', 'accepted', 'rejected', 'failed', 'held', 'all', 'listed']);

/**
 * `/api/photos`: the page's lists a window at a time, never the whole archive.
 * - `?since=CURSOR`: the photos changed after it (a state move, a decision): what a poll costs is
 *   what happened since the last;
 * - else a window of `filter` (default: every photo listed) in `folder` (its number in
 *   `folders`; default: all), the first `limit` (default 200) in path order, or those after
 *   `after` or before `before` (paths); with `more` (photos follow the window).
 * Either with the lists' counts over all folders and by folder (`counts`, `folders`, and their
 * version `v`) once they are made, unless the page has that version (`v=`). Null: no such
 * list or folder.
 */
function listPhotos(app: App, q: URLSearchParams): unknown | null {
  const counter = app.counter;
  counter.update();
  const at = counter.at();
  const cursor = `${at.t}.${at.d}`;
  // The counts once every photo was counted, and again only when they moved since the page's (`v`).
  const counts = counter.ready && q.get('v') !== String(counter.version) ? { v: counter.version, ...counter.summary() } : {};
  const since = parseCursor(q.get('since'));
  if (since !== null) {
    const photos = since.t === at.t && since.d === at.d ? [] : app.ledger.reviews.changedSince(since);
    return { cursor, full: false, photos: photos.map((p) => listed(app, p)), ...counts };
  }
  const filter = (q.get('filter') ?? 'listed') as ReviewFilter;
  if (!FILTERS.has(filter)) return null;
  const f = q.get('folder');
  const folder = f === null || f === '*' ? null : /^\d{1,9}$/.test(f) ? app.counter.folderName(Number(f)) : undefined;
  if (folder === undefined) return null;
  const limit = Math.min(MAX_WINDOW, Math.max(1, Number(q.get('limit') ?? WINDOW) || WINDOW));
  const after = q.get('after') ?? undefined;
  const before = q.get('before') ?? undefined;
  // One more than asked: whether photos follow the window.
  const rows = app.ledger.reviews.window({ filter, folder, after, before, limit: limit + 1 });
  const more = rows.length > limit;
  const photos = before !== undefined ? rows.slice(-limit) : rows.slice(0, limit);
  return {
    cursor,
    full: after === undefined && before === undefined,
    more,
    photos: photos.map((p) => listed(app, p)),
    ...counts,
  };
}

function parseCursor(s: string | null): ReviewCursor | null {
  const m = s === null ? null : /^(\d{1,15})\.(\d{1,15})$/.exec(s);
  return m ? { t: Number(m[1]), d: Number(m[2]) } : null;
}

/** A photo as the page lists it, with the number of its folder. */
function listed(app: App, p: ReviewPhoto): PhotoJson & { fi: number } {
  return { ...photoJson(p), fi: app.counter.folderIndex(p.path) };
}

const ACTIONS = new Set<ReviewAction>(['accept', 'reject', 'clear']);

async function decide(app: App, req: IncomingMessage, res: ServerResponse, id: number, extra: Record<string, string>): Promise<void> {
  const body = await readBody(req, 8192);
  let parsed: { action?: unknown; sha256?: unknown; reason?: unknown };
  try {
    parsed = JSON.parse(body) as typeof parsed;
  } catch {
    return send(res, 400, 'text/plain', 'not JSON');
  }
  const action = parsed?.action as ReviewAction;
  const sha = parsed?.sha256 === null || typeof parsed?.sha256 === 'string' ? parsed.sha256 : undefined;
  const reason = typeof parsed?.reason === 'string' ? parsed.reason : null;
  if (!ACTIONS.has(action) || sha === undefined)
    return send(res, 400, 'text/plain', 'expected {"action":"accept|reject|clear","sha256":…}');
  try {
    // Committed here, before the answer: the page shows the decision only once it is in the ledger.
    app.ledger.reviews.record(id, action, sha, reason);
  } catch (err) {
    if (err instanceof ReviewError) return sendJson(res, 409, { error: err.message, stale: err.why === 'stale' }, extra);
    // A run's write held the ledger past the busy timeout (5 s; a discovery of a huge tree): nothing was written.
    if (String((err as { code?: unknown })?.code).startsWith('SQLITE_BUSY')) {
      return sendJson(res, 503, { error: 'not saved: a run held the ledger for more than 5 s; press the key again' }, extra);
    }
    throw err;
  }
  return sendJson(res, 200, { photo: photoJson(app.ledger.reviews.photo(id)!) }, extra);
}

function readBody(req: IncomingMessage, limit: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let size = 0;
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > limit) {
        reject(new ReviewError('the decision is too large'));
        req.destroy();
      } else chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/** A path with `..`, `.` or empty segments, a backslash or a NUL, raw or percent-encoded once or twice: never ours. */
function safePath(raw: string): boolean {
  let s = raw;
  for (let i = 0; i < 3; i++) {
    if (/(^|[/\\])\.\.?([/\\?#]|$)|\\|\0|\/\//.test(s.split('?')[0]!) || /(^|[&=/])\.\.([/&]|$)|(^|=)\//.test(s.split('?')[1] ?? ''))
      return false;
    try {
      const next = decodeURIComponent(s);
      if (next === s) return true;
      s = next;
    } catch {
      return false;
    }
  }
  return false;
}

/**
 * A POST from the page itself: its Origin names this server. A browser that leaves Origin out of
 * a same-origin request says so in Sec-Fetch-Site; a request with neither is refused.
 */
function sameOrigin(app: App, req: IncomingMessage): boolean {
  const origin = req.headers.origin;
  if (origin !== undefined) return /^http:\/\//i.test(origin) && app.hosts.has(origin.slice(7).toLowerCase());
  return req.headers['sec-fetch-site'] === 'same-origin';
}

function cookieOf(req: IncomingMessage, name: string): string | null {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return null;
}

function matches(given: string | null, token: string): boolean {
  if (given === null) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

function send(res: ServerResponse, status: number, type: string, body: string, extra: Record<string, string> = {}): void {
  res.writeHead(status, { ...SECURITY_HEADERS, ...extra, 'Content-Type': type, 'Cache-Control': 'no-store' });
  res.end(body);
}

function sendJson(res: ServerResponse, status: number, value: unknown, extra: Record<string, string> = {}): void {
  send(res, status, 'application/json; charset=utf-8', jsonSafe(JSON.stringify(value)), extra);
}
