/**
 * The spec's envelope `{code, message, data, requestId}` and the headers every answer of the
 * API origin carries. Errors keep `data: null` so every body has the same four keys.
 */
import { CODES } from '../spec/codes.js';

export interface SimRequest {
  method: string;
  /** Path including any query string. */
  path: string;
  /** Lower-case header names. */
  headers: Record<string, string | undefined>;
  body: Buffer;
}

export interface SimResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
  /*
   * Signals of injected faults (faultInjector.ts) for the transports; absent on ordinary answers.
   * server.ts acts them out on the socket, inprocess.ts as the error or body a client sees.
   */
  /** Answer nothing: HTTP closes the connection unwritten; in-process throws ECONNRESET with sent: true. */
  drop?: boolean;
  /** Hold the answer this many ms (on the clock) before sending it. */
  delayMs?: number;
  /** `body` is shorter than its content-length header: HTTP sends it, then closes the connection. */
  truncated?: boolean;
}

export { CODES };

const REQUEST_ID_RE = /^[A-Za-z0-9_-]{1,64}$/;

/** The client's own X-Request-Id when it follows the spec's rules, else undefined. */
export function clientRequestId(headers: Record<string, string | undefined>): string | undefined {
  const v = headers['x-request-id'];
  return v !== undefined && REQUEST_ID_RE.test(v) ? v : undefined;
}

export function jsonResponse(status: number, payload: unknown, headers: Record<string, string> = {}): SimResponse {
  return {
    status,
    headers: { 'content-type': 'application/json; charset=utf-8', ...headers },
    body: Buffer.from(JSON.stringify(payload), 'utf8'),
  };
}

function envelope(
  requestId: string,
  status: number,
  code: number,
  message: string,
  data: unknown,
  headers: Record<string, string> = {},
): SimResponse {
  return jsonResponse(status, { code, message, data, requestId }, { ...headers, 'x-request-id': requestId });
}

export function ok(requestId: string, data: unknown): SimResponse {
  return envelope(requestId, 200, CODES.OK, 'success', data);
}

/** A failure before the envelope's requestId is known is impossible: the caller always has one. */
export function fail(requestId: string, status: number, code: number, message: string, headers: Record<string, string> = {}): SimResponse {
  return envelope(requestId, status, code, message, null, headers);
}

export function paramError(requestId: string, message: string): SimResponse {
  return fail(requestId, 400, CODES.PARAM, message);
}

export function plain(status: number, text: string, headers: Record<string, string> = {}): SimResponse {
  return {
    status,
    headers: { 'content-type': 'text/plain; charset=utf-8', ...headers },
    body: Buffer.from(text, 'utf8'),
  };
}
