import { describe, expect, it } from 'vitest';
import { ApiClient, type CallRecord } from '../../src/api/client.js';
import { isValidRequestId } from '../../src/api/requestId.js';
import { CANARY_KEY, FakeTransport, ok } from './fakes.js';

function setup(baseUrl = 'https://api.example.com') {
  const records: CallRecord[] = [];
  const transport = new FakeTransport((req) => {
    if (req.url.includes('/credits')) return ok({ totalCredit: 10, usedCredit: 1, remainingCredit: 9 });
    if (req.url.includes('/tasks/')) return ok({ taskId: 't1', status: 'PENDING', creation: 1767225600000 });
    return ok({ taskId: 'task-1', businessType: 'RESTORE', status: 'PENDING' });
  });
  const client = new ApiClient({ baseUrl, apiKey: CANARY_KEY, transport, onCall: (r) => records.push(r) });
  return { client, transport, records };
}

describe('ApiClient requests', () => {
  it('sends x-api-key and a valid generated X-Request-Id', async () => {
    const { client, transport } = setup();
    await client.credits();
    const h = transport.last.headers;
    expect(h['x-api-key']).toBe(CANARY_KEY);
    expect(isValidRequestId(h['x-request-id'])).toBe(true);
    expect(transport.last.method).toBe('GET');
    expect(transport.last.url).toBe('https://api.example.com/api/v1/credits');
    expect(transport.last.body).toBeUndefined();
  });

  it('sends the caller-chosen X-Request-Id unchanged', async () => {
    const { client, transport, records } = setup();
    await client.create('restore', { image: 'https://img/a.jpg' }, { requestId: 'sub-000123' });
    expect(transport.last.headers['x-request-id']).toBe('sub-000123');
    expect(records[0]!.sentRequestId).toBe('sub-000123');
  });

  it('uses a fresh request id per call', async () => {
    const { client, transport } = setup();
    await client.credits();
    await client.credits();
    expect(transport.requests[0]!.headers['x-request-id']).not.toBe(transport.requests[1]!.headers['x-request-id']);
  });

  it('refuses an invalid caller request id without sending or logging anything', async () => {
    const { client, transport, records } = setup();
    await expect(client.credits({ requestId: 'not valid!' })).rejects.toThrow(RangeError);
    expect(transport.requests).toHaveLength(0);
    expect(records).toHaveLength(0);
  });

  it('posts a JSON create body to the capability path, with only the given fields', async () => {
    const { client, transport } = setup();
    const r = await client.create('upscale', { image: 'https://img/a.jpg', mode: 'portrait', resolution: '4K' });
    expect(r).toEqual({
      taskId: 'task-1',
      businessType: 'RESTORE',
      waitTimeMs: null,
      parentTaskId: null,
      rank: null,
      requestId: 'srv-req-1',
    });
    expect(transport.last.method).toBe('POST');
    expect(transport.last.url).toBe('https://api.example.com/api/v1/upscale/generate');
    expect(transport.last.headers['content-type']).toBe('application/json');
    expect(JSON.parse(String(transport.last.body))).toEqual({ image: 'https://img/a.jpg', mode: 'portrait', resolution: '4K' });

    await client.create('image2image', { image: 'https://img/b.jpg', style: 'oil', prompt: 'warm' });
    expect(transport.last.url).toBe('https://api.example.com/api/v1/image2image/generate');
    expect(JSON.parse(String(transport.last.body))).toEqual({ image: 'https://img/b.jpg', style: 'oil', prompt: 'warm' });
  });

  it('refuses a mode on a capability that takes none, before sending', async () => {
    const { client, transport } = setup();
    await expect(client.create('restore', { image: 'https://img/a.jpg', mode: 'text' })).rejects.toThrow(/mode/);
    expect(transport.requests).toHaveLength(0);
  });

  it('URL-encodes path parameters and refuses dot segments', async () => {
    const { client, transport, records } = setup();
    const t = await client.task('ENHANCE', 'a/b?c#d e');
    expect(transport.last.url).toBe('https://api.example.com/api/v1/tasks/ENHANCE/a%2Fb%3Fc%23d%20e');
    expect(records[0]!.endpoint).toBe('/api/v1/tasks/{businessType}/{taskId}');
    expect(records[0]!.path).toBe('/api/v1/tasks/ENHANCE/a%2Fb%3Fc%23d%20e');
    expect(t.status).toBe('PENDING');
    await expect(client.task('ENHANCE', '..')).rejects.toThrow(RangeError);
    await expect(client.task('', 't')).rejects.toThrow(RangeError);
  });

  it.each([
    ['https://api.example.com', 'https://api.example.com/api/v1/credits'],
    ['https://api.example.com/', 'https://api.example.com/api/v1/credits'],
    ['https://gw.example.com/darkroom', 'https://gw.example.com/darkroom/api/v1/credits'],
    ['https://gw.example.com/darkroom//', 'https://gw.example.com/darkroom/api/v1/credits'],
    ['http://127.0.0.1:8080/', 'http://127.0.0.1:8080/api/v1/credits'],
  ])('baseUrl %s composes %s', async (base, url) => {
    const { client, transport } = setup(base);
    await client.credits();
    expect(transport.last.url).toBe(url);
    expect(new URL(transport.last.url).origin).toBe(new URL(base).origin);
  });

  it.each(['ftp://x.example', 'not a url', 'https://user:pw@x.example', 'https://x.example/?a=1'])('refuses baseUrl %s', (base) => {
    expect(() => new ApiClient({ baseUrl: base, apiKey: CANARY_KEY, transport: new FakeTransport(() => ok({})) })).toThrow(TypeError);
  });

  it('calls onCall once per call with the call facts', async () => {
    const { client, records } = setup();
    await client.credits();
    expect(records).toHaveLength(1);
    const r = records[0]!;
    expect(r).toMatchObject({
      method: 'GET',
      endpoint: '/api/v1/credits',
      path: '/api/v1/credits',
      httpStatus: 200,
      businessCode: 0,
      requestId: 'srv-req-1',
      errorCode: null,
      sent: true,
      retryAfterMs: null,
      rateLimit: null,
    });
    expect(isValidRequestId(r.sentRequestId)).toBe(true);
    expect(r.durationMs).toBeGreaterThanOrEqual(0);
    expect(typeof r.atMs).toBe('number');
  });

  it('calls onCall before the promise settles', async () => {
    const order: string[] = [];
    const transport = new FakeTransport(() => ok({ totalCredit: 1, usedCredit: 0, remainingCredit: 1 }));
    const client = new ApiClient({
      baseUrl: 'https://api.example.com',
      apiKey: CANARY_KEY,
      transport,
      onCall: () => order.push('logged'),
    });
    await client.credits().then(() => order.push('settled'));
    expect(order).toEqual(['logged', 'settled']);
  });

  it('keeps the key out of the client object', () => {
    const { client } = setup();
    expect(JSON.stringify(client)).not.toContain(CANARY_KEY);
    expect(Object.values(client).join(' ')).not.toContain(CANARY_KEY);
  });

  it('reads usage and masks an echoed key', async () => {
    const transport = new FakeTransport(() =>
      ok({
        apiKey: CANARY_KEY,
        userId: 'u1',
        minuteRemaining: 98,
        hourRemaining: 990,
        globalMinuteRemaining: 9000,
        globalHourRemaining: 40000,
      }),
    );
    const client = new ApiClient({ baseUrl: 'https://api.example.com', apiKey: CANARY_KEY, transport });
    const u = await client.usage();
    expect(u.apiKey).not.toContain(CANARY_KEY);
    expect(u.minuteRemaining).toBe(98);
  });

  it('keeps a 64-bit asyncTaskId exact from the wire to the poll path', async () => {
    const transport = new FakeTransport((req) =>
      req.url.includes('/tasks/')
        ? ok({ taskId: '1836548719273459713', status: 'PENDING' })
        : {
            status: 200,
            headers: { 'x-request-id': 'srv-i2i' },
            body: Buffer.from(
              '{"code":0,"message":"ok","requestId":"srv-i2i","data":{"asyncTaskQueueVO":{"rank":1,"waitTime":9000,"asyncTaskId":1836548719273459713}}}',
            ),
          },
    );
    const client = new ApiClient({ baseUrl: 'https://api.example.com', apiKey: CANARY_KEY, transport });
    const r = await client.create('image2image', { image: 'https://img/a.jpg', style: 'oil' });
    expect(r).toEqual({
      taskId: '1836548719273459713',
      businessType: null,
      waitTimeMs: 9000,
      parentTaskId: null,
      rank: 1,
      requestId: 'srv-i2i',
    });
    await client.task('IMAGE_TO_IMAGE', r.taskId);
    expect(transport.last.url).toBe('https://api.example.com/api/v1/tasks/IMAGE_TO_IMAGE/1836548719273459713');
  });
});
