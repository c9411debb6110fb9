import { describe, expect, it } from 'vitest';
import { SPEC_ERROR_STATUSES } from '../helpers/errorTable.js';
import { ApiClient, type CallRecord } from '../../src/api/client.js';
import { ApiError, TransportError } from '../../src/errors.js';
import { type WireRequest, type WireResponse } from '../../src/spec/wire.js';
import { installClock, VirtualClock } from '../../src/clock.js';
import { allText, CANARY_KEY, FakeTransport, json, ok, type Responder } from './fakes.js';

function setup(respond: Responder, extra: { timeoutMs?: number; keyEnv?: string } = {}) {
  const records: CallRecord[] = [];
  const transport = new FakeTransport(respond);
  const client = new ApiClient({
    baseUrl: 'https://api.example.com',
    apiKey: CANARY_KEY,
    transport,
    onCall: (r) => records.push(r),
    ...extra,
  });
  return { client, transport, records };
}

async function failure(p: Promise<unknown>): Promise<ApiError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(ApiError);
    return e as ApiError;
  }
  throw new Error('expected the call to fail');
}

/** The service echoing the key back in every text field it has: nothing may carry it on. */
function errorBody(code: number, requestId: string | null = 'srv-9') {
  return {
    code,
    message: `rejected key ${CANARY_KEY}`,
    ...(requestId === null ? {} : { requestId }),
  };
}

describe('ApiClient errors', () => {
  it.each(SPEC_ERROR_STATUSES)('HTTP %i code %i → ApiError %s %s, logged once, key never shown', async (status, code, kind, errCode) => {
    const { client, records } = setup(() => json(status, errorBody(code), { 'x-request-id': 'srv-9' }));
    const e = await failure(client.create('enhance', { image: 'https://img/a.jpg' }, { requestId: 'mine-1' }));
    expect(e.name).toBe('ApiError');
    expect(e.kind).toBe(kind);
    expect(e.answer).toBe(errCode);
    expect(e.httpStatus).toBe(status);
    expect(e.businessCode).toBe(code);
    expect(e.requestId).toBe('srv-9');
    expect(e.sentRequestId).toBe('mine-1');
    expect(e.endpoint).toBe('/api/v1/enhance/generate');
    expect(e.message).not.toContain('\n');
    expect(e.message).toContain(`HTTP ${status}`);
    expect(e.message).toContain('srv-9');
    expect(allText(e)).not.toContain(CANARY_KEY);
    expect(JSON.stringify(e)).not.toContain(CANARY_KEY);
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({
      httpStatus: status,
      businessCode: code,
      requestId: 'srv-9',
      sentRequestId: 'mine-1',
      errorCode: errCode,
      sent: true,
      endpoint: '/api/v1/enhance/generate',
    });
    expect(JSON.stringify(records)).not.toContain(CANARY_KEY);
  });

  it('401 says what to do, naming the key variable', async () => {
    const { client } = setup(() => json(401, { code: -1, message: 'invalid key', requestId: 'abc' }), {
      keyEnv: 'DARKROOM_API_KEY',
    });
    const e = await failure(client.credits());
    expect(e.message).toMatch(/key is missing, invalid or inactive \(GET \/api\/v1\/credits, HTTP 401, code -1, requestId abc/);
    expect(e.message).toMatch(/: set a valid key in DARKROOM_API_KEY$/);
  });

  it('24403 inside HTTP 200 without requestId is a stop-account ApiError', async () => {
    const { client, records } = setup(() =>
      json(200, { code: 24403, message: 'The account is not subscribed or out of the subscription period' }),
    );
    const e = await failure(client.create('image2image', { image: 'https://img/a.jpg', style: 's' }));
    expect(e.kind).toBe('stop-account');
    expect(e.answer).toBe('NOT_SUBSCRIBED');
    expect(e.httpStatus).toBe(200);
    expect(e.requestId).toBeNull();
    expect(e.message).toContain(`sent X-Request-Id ${e.sentRequestId}`);
    expect(records[0]!.requestId).toBeNull();
    expect(records[0]!.errorCode).toBe('NOT_SUBSCRIBED');
  });

  it('takes the requestId from the X-Request-Id header when the body has none', async () => {
    const { client } = setup(() => json(429, { code: -1000, message: 'busy' }, { 'x-request-id': 'hdr-7' }));
    expect((await failure(client.credits())).requestId).toBe('hdr-7');
  });

  it.each(['{"code":0,"data":', '<html>oops</html>', '', '"just a string"', '{"message":"no code"}'])(
    'malformed JSON on 2xx (%j) is ambiguous',
    async (text) => {
      const { client, records } = setup(() => json(200, text));
      const e = await failure(client.create('enhance', { image: 'https://img/a.jpg' }));
      expect(e.kind).toBe('ambiguous');
      expect(e.answer).toBe('MALFORMED_RESPONSE');
      expect(records).toHaveLength(1);
      expect(records[0]!.errorCode).toBe('MALFORMED_RESPONSE');
    },
  );

  it('code 0 with a create body lacking any taskId is ambiguous (the task may exist)', async () => {
    const { client } = setup(() => ok({ parentTaskId: 'p', tasks: [{}], queueStatus: 'PENDING' }));
    const e = await failure(client.create('enhance', { image: 'https://img/a.jpg' }));
    expect(e.kind).toBe('ambiguous');
    expect(e.answer).toBe('MALFORMED_RESPONSE');
    expect(e.message).toContain('no taskId');
  });

  it('an HTML 502 from a proxy is ambiguous with no business code', async () => {
    const { client } = setup(() => ({ status: 502, headers: {}, body: Buffer.from('<html>bad gateway</html>') }));
    const e = await failure(client.create('restore', { image: 'https://img/a.jpg' }));
    expect(e.kind).toBe('ambiguous');
    expect(e.businessCode).toBeNull();
  });

  it('carries Retry-After and RateLimit-* on a 429, in the error and the record', async () => {
    const clock = new VirtualClock(Date.UTC(2026, 0, 1));
    const restore = installClock(clock);
    try {
      const resetS = Math.floor(clock.now() / 1000) + 20;
      const { client, records } = setup(() =>
        json(429, errorBody(-1000), {
          'retry-after': '20',
          'ratelimit-limit': '3',
          'ratelimit-remaining': '0',
          'ratelimit-reset': String(resetS),
          'ratelimit-scope': 'api_key_active_tasks',
        }),
      );
      const e = await failure(client.create('enhance', { image: 'https://img/a.jpg' }));
      expect(e.kind).toBe('retry-later');
      expect(e.retryAfterMs).toBe(20_000);
      expect(e.rateLimit).toEqual({ limit: 3, remaining: 0, resetAtMs: resetS * 1000, scope: 'api_key_active_tasks' });
      expect(records[0]!.retryAfterMs).toBe(20_000);
      expect(records[0]!.rateLimit?.scope).toBe('api_key_active_tasks');
    } finally {
      restore();
    }
  });

  it("a redirect is a config stop, naming the Location's origin and path, never its query or user info", async () => {
    const { client, transport } = setup(() => ({
      status: 302,
      headers: { location: `https://user:${CANARY_KEY}@evil.example.net/v2/api/v1/credits?token=${CANARY_KEY}#f` },
      body: Buffer.alloc(0),
    }));
    const e = await failure(client.credits());
    expect(e.kind).toBe('stop-config');
    expect(e.answer).toBe('REDIRECT_REFUSED');
    expect(e.message).toMatch(
      /^the base URL redirects to https:\/\/evil\.example\.net\/v2\/api\/v1\/credits \(GET \/api\/v1\/credits, HTTP 302, .*\): set service\.baseUrl to the final URL/,
    );
    expect(allText(e)).not.toContain(CANARY_KEY);
    expect(e.message).not.toContain('token');
    expect(transport.requests).toHaveLength(1);
  });

  it('a redirect without a Location is a config stop too', async () => {
    const { client } = setup(() => ({ status: 301, headers: {}, body: Buffer.alloc(0) }));
    const e = await failure(client.upload(Buffer.from('x'), 'a.jpg', 'image/jpeg'));
    expect(e.kind).toBe('stop-config');
    expect(e.message).toMatch(/^the base URL answered a redirect \(HTTP 301\) without a Location/);
  });

  it('a transport failure before sending is not-sent', async () => {
    const { client, records } = setup(() => {
      throw new TransportError(`connect ECONNREFUSED 127.0.0.1:9 (key ${CANARY_KEY})`, 'ECONNREFUSED', false);
    });
    const e = await failure(client.create('enhance', { image: 'https://img/a.jpg' }, { requestId: 'mine-2' }));
    expect(e.kind).toBe('not-sent');
    expect(e.answer).toBe('NOT_SENT');
    expect(e.httpStatus).toBeNull();
    expect(e.transportCode).toBe('ECONNREFUSED');
    expect(allText(e)).not.toContain(CANARY_KEY);
    expect(records).toEqual([
      expect.objectContaining({ httpStatus: null, businessCode: null, requestId: null, sent: false, errorCode: 'NOT_SENT' }),
    ]);
  });

  it('a transport failure after sending is ambiguous', async () => {
    const { client, records } = setup(() => {
      throw new TransportError('socket hang up', 'ECONNRESET', true);
    });
    const e = await failure(client.create('enhance', { image: 'https://img/a.jpg' }));
    expect(e.kind).toBe('ambiguous');
    expect(e.answer).toBe('OUTCOME_UNKNOWN');
    expect(records[0]).toMatchObject({ httpStatus: null, sent: true, errorCode: 'OUTCOME_UNKNOWN' });
  });

  it('an unexpected throw from a transport counts as possibly sent', async () => {
    const { client, records } = setup(() => {
      throw new Error('bug');
    });
    const e = await failure(client.credits());
    expect(e.kind).toBe('ambiguous');
    expect(records[0]!.sent).toBe(true);
  });

  it('the per-call deadline runs on the clock and ends in an ambiguous error', async () => {
    const clock = new VirtualClock(Date.UTC(2026, 0, 1));
    const restore = installClock(clock);
    try {
      const hanging = (req: WireRequest) =>
        new Promise<WireResponse>((_, reject) => {
          req.signal?.addEventListener('abort', () => reject(req.signal?.reason));
        });
      const { client, records } = setup(hanging, { timeoutMs: 5_000 });
      const p = failure(client.create('enhance', { image: 'https://img/a.jpg' }));
      await clock.run(() => records.length > 0, { maxMs: 10_000 });
      const e = await p;
      expect(e.kind).toBe('ambiguous');
      expect(e.message).toContain('no answer within 5000 ms');
      expect(records[0]!.durationMs).toBe(5_000);
      expect(clock.pendingTimers()).toBe(0);
    } finally {
      restore();
    }
  });

  it('a successful call leaves no deadline timer behind', async () => {
    const clock = new VirtualClock();
    const restore = installClock(clock);
    try {
      const { client } = setup(() => ok({ totalCredit: 1, usedCredit: 0, remainingCredit: 1 }));
      await client.credits();
      expect(clock.pendingTimers()).toBe(0);
    } finally {
      restore();
    }
  });

  it('an onCall that throws fails the call (an unlogged call must not look normal)', async () => {
    const transport = new FakeTransport(() => ok({ totalCredit: 1, usedCredit: 0, remainingCredit: 1 }));
    const client = new ApiClient({
      baseUrl: 'https://api.example.com',
      apiKey: CANARY_KEY,
      transport,
      onCall: () => {
        throw new Error('ledger is read-only');
      },
    });
    await expect(client.credits()).rejects.toThrow('ledger is read-only');
  });
});
