import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fingerprintKey } from '../../src/spec/key.js';
import { call, KEY, KEY2, newModel, START, virtualTime, type Harness } from './helpers.js';

let h: Harness;
beforeEach(() => {
  h = virtualTime();
});
afterEach(() => h.restore());

describe('per-key minute window', () => {
  it('rejects the 101st call in a rolling minute with the spec headers, and admits again as it slides', async () => {
    const model = newModel();
    for (let i = 0; i < 100; i++) {
      h.clock.advanceTo(START + i * 100);
      const a = await call(model, 'GET', '/api/v1/credits');
      expect(a.status).toBe(200);
    }
    h.clock.advanceTo(START + 10_000);
    const rejected = await call(model, 'GET', '/api/v1/credits');
    expect(rejected.status).toBe(429);
    expect(rejected.body.code).toBe(-1000);
    expect(rejected.body.data).toBeNull();
    expect(rejected.headers['ratelimit-scope']).toBe('api_key_minute');
    expect(rejected.headers['ratelimit-limit']).toBe('100');
    expect(rejected.headers['ratelimit-remaining']).toBe('0');
    // The oldest call (at START) leaves the window at START + 60 s.
    expect(rejected.headers['retry-after']).toBe('50');
    expect(rejected.headers['ratelimit-reset']).toBe(String((START + 60_000) / 1000));
    expect(rejected.headers['x-request-id']).toBe(rejected.body.requestId);

    h.clock.advanceTo(START + 59_999);
    expect((await call(model, 'GET', '/api/v1/credits')).status).toBe(429);

    h.clock.advanceTo(START + 60_000);
    expect((await call(model, 'GET', '/api/v1/credits')).status).toBe(200);
    // Only one call left the window: the next one at the same instant is over again,
    // and the call at START + 100 ms frees the next slot.
    const again = await call(model, 'GET', '/api/v1/credits');
    expect(again.status).toBe(429);
    expect(again.headers['retry-after']).toBe('1');
  });

  it('does not count rejected calls in the server window, but the audit sees them', async () => {
    const model = newModel({ limits: { callsPerMinute: 5 } });
    for (let i = 0; i < 5; i++) expect((await call(model, 'GET', '/api/v1/credits')).status).toBe(200);
    for (let i = 0; i < 20; i++) expect((await call(model, 'GET', '/api/v1/credits')).status).toBe(429);
    h.clock.advanceTo(START + 60_000);
    // If the 20 rejected calls had counted, this window would still be full.
    for (let i = 0; i < 5; i++) expect((await call(model, 'GET', '/api/v1/credits')).status).toBe(200);
    expect((await call(model, 'GET', '/api/v1/credits')).status).toBe(429);
    const k = model.audit().keys[fingerprintKey(KEY)]!;
    expect(k.calls).toBe(31);
    expect(k.accepted).toBe(10);
    expect(k.rejected429).toBe(21);
    expect(k.rejectedByScope).toEqual({ api_key_minute: 21 });
    // The 25 calls at START and the 6 at START + 60 s are exactly a minute apart: never together.
    expect(k.maxCallsInAnyMinute).toBe(25);
  });

  it('keeps windows per key', async () => {
    const model = newModel({ limits: { callsPerMinute: 2 } });
    await call(model, 'GET', '/api/v1/credits');
    await call(model, 'GET', '/api/v1/credits');
    expect((await call(model, 'GET', '/api/v1/credits')).status).toBe(429);
    expect((await call(model, 'GET', '/api/v1/credits', { key: KEY2 })).status).toBe(200);
  });
});

describe('per-key hour window', () => {
  it('rejects the 1001st call in a rolling hour with scope api_key_hour', async () => {
    const model = newModel();
    for (let m = 0; m < 10; m++) {
      for (let i = 0; i < 100; i++) {
        h.clock.advanceTo(START + m * 60_000 + i * 10);
        expect((await call(model, 'GET', '/api/v1/credits')).status).toBe(200);
      }
    }
    h.clock.advanceTo(START + 11 * 60_000);
    const rejected = await call(model, 'GET', '/api/v1/credits');
    expect(rejected.status).toBe(429);
    expect(rejected.headers['ratelimit-scope']).toBe('api_key_hour');
    expect(rejected.headers['ratelimit-limit']).toBe('1000');
    expect(rejected.headers['retry-after']).toBe(String(3600 - 11 * 60));
    expect(rejected.headers['ratelimit-reset']).toBe(String((START + 3_600_000) / 1000));

    h.clock.advanceTo(START + 3_600_000);
    expect((await call(model, 'GET', '/api/v1/credits')).status).toBe(200);
    const audit = model.audit().keys[fingerprintKey(KEY)]!;
    expect(audit.maxCallsInAnyHour).toBe(1001);
    expect(audit.maxCallsInAnyMinute).toBe(100);
  });
});

describe('global windows', () => {
  it('share one ceiling across keys with scope global_minute', async () => {
    const model = newModel({ global: { callsPerMinute: 5 } });
    for (let i = 0; i < 3; i++) expect((await call(model, 'GET', '/api/v1/credits')).status).toBe(200);
    for (let i = 0; i < 2; i++) expect((await call(model, 'GET', '/api/v1/credits', { key: KEY2 })).status).toBe(200);
    const rejected = await call(model, 'GET', '/api/v1/credits', { key: KEY2 });
    expect(rejected.status).toBe(429);
    expect(rejected.headers['ratelimit-scope']).toBe('global_minute');
    expect(rejected.headers['ratelimit-limit']).toBe('5');
  });

  it('names the scope that frees last when several are full, so Retry-After covers all', async () => {
    const model = newModel({ limits: { callsPerMinute: 2 }, global: { callsPerHour: 2 } });
    await call(model, 'GET', '/api/v1/credits');
    await call(model, 'GET', '/api/v1/credits');
    const rejected = await call(model, 'GET', '/api/v1/credits');
    expect(rejected.headers['ratelimit-scope']).toBe('global_hour');
    expect(rejected.headers['retry-after']).toBe('3600');
  });
});

describe('usage', () => {
  it('counts itself before reporting what remains', async () => {
    const model = newModel();
    await call(model, 'GET', '/api/v1/credits');
    const a = await call(model, 'GET', '/api/v1/usage');
    expect(a.status).toBe(200);
    expect(a.body.data).toMatchObject({
      minuteRemaining: 98,
      hourRemaining: 998,
      globalMinuteRemaining: 9998,
      globalHourRemaining: 49998,
    });
    expect(typeof a.body.data.userId).toBe('string');
    expect(a.body.data.apiKey).not.toBe(KEY);
    expect(a.body.data.apiKey).not.toContain(KEY.slice(2, -2));
  });
});
