import type { Transport, WireRequest, WireResponse } from '../../src/spec/wire.js';

/** A key that must never show up in any error, record or message. */
export const CANARY_KEY = 'sk-CANARY-7f3a9c1e5b2d4f60-DO-NOT-LEAK';

export type Responder = (req: WireRequest) => WireResponse | Promise<WireResponse>;

export function json(status: number, body: unknown, headers: Record<string, string> = {}): WireResponse {
  return {
    status,
    headers: { 'content-type': 'application/json', ...headers },
    body: Buffer.from(typeof body === 'string' ? body : JSON.stringify(body)),
  };
}

export function ok(data: unknown, requestId = 'srv-req-1'): WireResponse {
  return json(200, { code: 0, message: 'success', data, requestId }, { 'x-request-id': requestId });
}

/** Records every request and answers with `respond`. */
export class FakeTransport implements Transport {
  readonly requests: WireRequest[] = [];
  constructor(private respond: Responder) {}
  async send(req: WireRequest): Promise<WireResponse> {
    this.requests.push(req);
    return this.respond(req);
  }
  get last(): WireRequest {
    const r = this.requests.at(-1);
    if (!r) throw new Error('no request sent');
    return r;
  }
}

/** Every string reachable from `value` (own enumerable props, message, stack), for leak checks. */
export function allText(value: unknown): string {
  const seen = new Set<unknown>();
  const parts: string[] = [];
  const walk = (v: unknown) => {
    if (v === null || v === undefined) return;
    if (typeof v === 'string') return void parts.push(v);
    if (typeof v !== 'object' || seen.has(v)) return;
    seen.add(v);
    if (v instanceof Error) parts.push(v.message, v.stack ?? '', String(v));
    for (const k of Object.keys(v)) walk((v as Record<string, unknown>)[k]);
  };
  walk(value);
  return parts.join('\n');
}
