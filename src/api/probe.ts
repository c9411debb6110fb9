/**
 * Is the base URL the image service? One request WITHOUT the key: the spec answers a
 * missing key with HTTP 401 and its envelope (code -1, a requestId) on every endpoint, so
 * GET /api/v1/credits without `x-api-key` proves the host is the API, costs nothing from
 * the key's windows (only authenticated calls count, spec § Limits 1), and never hands
 * the key to a host that has not shown itself to be the service (L5).
 */
import { clock } from '../clock.js';
import { redirectReason, REDIRECT_REFUSED, serviceAnswer, type ServiceAnswer } from './classify.js';
import { sanitize } from './errors.js';
import { getHeader } from './headers.js';
import { parseJsonKeepingBigInts } from './json.js';
import { newRequestId } from './requestId.js';
import { parseEnvelope } from './shapes.js';
import { undiciTransport } from './transport.js';
import { toTransportError, type Transport } from '../spec/wire.js';

export interface ProbeResult {
  readonly answer: ServiceAnswer;
  /** What came back, for the operator's line: "ECONNREFUSED", "HTTP 404 text/html without the API's envelope". */
  readonly detail: string;
  /** A redirect: the operator's line for it (classify.ts REDIRECT_REFUSED), naming its target. */
  readonly redirect?: string;
}

const PROBE_PATH = '/api/v1/credits';

export interface ProbeOptions {
  readonly transport?: Transport;
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
  /** Never to appear in `detail` (the keys, should a server echo one). */
  readonly secrets?: readonly string[];
}

export async function probeService(baseUrl: string, o: ProbeOptions): Promise<ProbeResult> {
  const base = new URL(baseUrl);
  const url = `${base.origin}${base.pathname.replace(/\/+$/, '')}${PROBE_PATH}`;
  const own = o.transport === undefined ? undiciTransport({ connectTimeoutMs: o.timeoutMs }) : undefined;
  const transport = o.transport ?? own!;
  const deadline = clock.deadline(o.timeoutMs, o.signal);
  try {
    const res = await transport.send({
      method: 'GET',
      url,
      headers: { accept: 'application/json', 'x-request-id': newRequestId() },
      signal: deadline.signal,
    });
    let body: unknown;
    try {
      body = parseJsonKeepingBigInts(res.body.toString('utf8'));
    } catch {
      body = undefined;
    }
    const code = parseEnvelope(body)?.code ?? null;
    const answer = serviceAnswer(res.status, code);
    const type = getHeader(res.headers, 'content-type')?.split(';')[0]?.trim();
    const detail =
      code !== null
        ? `HTTP ${res.status}, code ${code}`
        : `GET ${PROBE_PATH} answered HTTP ${res.status}${type ? ` ${sanitize(type, o.secrets ?? [], 60)}` : ''} without the API's envelope`;
    if (res.status >= 300 && res.status < 400) {
      return {
        answer: 'not-api',
        detail,
        redirect: `${redirectReason(res.status, getHeader(res.headers, 'location'), url)} (GET ${PROBE_PATH}, HTTP ${res.status}): ${REDIRECT_REFUSED.action}`,
      };
    }
    // The API refuses a request without the key (spec, Authentication 5: HTTP 401, code -1);
    // busy, it may say 429 or 5xx first. A success to a keyless request is something else
    // that speaks the envelope (a catch-all stub, a mock left running): it must not get the key.
    if (answer === 'api' && res.status < 400) {
      return {
        answer: 'not-api',
        detail: `GET ${PROBE_PATH} without the key answered HTTP ${res.status}, code ${code}: the API refuses a request without x-api-key (HTTP 401)`,
      };
    }
    return { answer, detail };
  } catch (err) {
    const timedOut = deadline.signal.aborted && !o.signal?.aborted;
    const te = toTransportError(err, false, deadline.signal.aborted);
    const detail = timedOut
      ? `no answer within ${Math.round(o.timeoutMs / 1000)} s`
      : sanitize(describe(te.transportCode, te.message), o.secrets ?? [], 160);
    return { answer: 'no-answer', detail };
  } finally {
    deadline.clear();
    await own?.close();
  }
}

const WORDS: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'no such host (DNS)',
  EAI_AGAIN: 'DNS lookup failed for now',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  UND_ERR_CONNECT_TIMEOUT: 'connect timeout',
  ECONNRESET: 'connection reset',
};

function describe(code: string, message: string): string {
  const words = WORDS[code];
  if (words) return `${code}, ${words}`;
  // TLS: undici reports the certificate problem by its OpenSSL code.
  if (/CERT|TLS|SSL|SELF_SIGNED|UNABLE_TO_VERIFY/i.test(code)) return `${code}, a TLS error (certificate or protocol)`;
  return message;
}
