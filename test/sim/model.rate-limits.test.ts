import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fingerprintKey } from '../../src/spec/key.js';
import { call, KEY, KEY2, newModel, START, testImage, upload, virtualTime, type Harness } from './helpers.js';

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
    // The refused call counts too: one more fits once two calls have left the window, the
    // second (at START + 100 ms) at START + 60.1 s.
    expect(rejected.headers['retry-after']).toBe('51');
    expect(rejected.headers['ratelimit-reset']).toBe(String((START + 61_000) / 1000));
    expect(rejected.headers['x-request-id']).toBe(rejected.body.requestId);

    h.clock.advanceTo(START + 60_100);
    expect((await call(model, 'GET', '/api/v1/credits')).status).toBe(200);
    // The window is full again: the next call at the same instant is over, and the call at
    // START + 200 ms frees the next place.
    const again = await call(model, 'GET', '/api/v1/credits');
    expect(again.status).toBe(429);
    expect(again.headers['retry-after']).toBe('1');
  });

  it('counts refused calls in the server window, as the spec counts every authenticated call: a client calling too often never gets in', async () => {
    const model = newModel({ limits: { callsPerMinute: 5 } });
    const at = async (s: number) => {
      h.clock.advanceTo(START + s * 1000);
      return call(model, 'GET', '/api/v1/credits');
    };
    for (let s = 0; s <= 40; s += 10) expect((await at(s)).status).toBe(200);
    // Refused at 50 s, and counted: one more fits once two calls have left the window (the one at 10 s, at 70 s).
    const refused = await at(50);
    expect(refused.status).toBe(429);
    expect(refused.headers['retry-after']).toBe('20');
    expect(refused.headers['ratelimit-reset']).toBe(String((START + 70_000) / 1000));
    // Six calls a minute into a window of five: every one finds the last five in the window.
    for (let s = 60; s <= 170; s += 10) expect((await at(s)).status, `at ${s} s`).toBe(429);
    // Quiet for a minute: room again.
    expect((await at(230)).status).toBe(200);
    const k = model.audit().keys[fingerprintKey(KEY)]!;
    expect(k.accepted).toBe(6);
    expect(k.rejected429).toBe(13);
    expect(k.rejectedByScope).toEqual({ api_key_minute: 13 });
  });

  it('counts a refused create in the windows, whatever scope refused it', async () => {
    const model = newModel({ limits: { callsPerMinute: 5, activeTasks: 1 }, latency: { medianMs: 600_000, sigma: 0 } });
    const image = await upload(model, await testImage());
    expect((await call(model, 'POST', '/api/v1/restore/generate', { json: { image } })).status).toBe(200);
    const slots = await call(model, 'POST', '/api/v1/restore/generate', { json: { image } });
    expect(slots.status).toBe(429);
    expect(slots.headers['ratelimit-scope']).toBe('api_key_active_tasks');
    const u = await call(model, 'GET', '/api/v1/usage');
    // The upload, the create, the refused create and the usage call itself.
    expect(u.body.data.minuteRemaining).toBe(1);
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
    // Counted, the refused call holds a place: two calls must leave, the second at START + 10 ms.
    expect(rejected.headers['retry-after']).toBe(String(3600 - 11 * 60 + 1));
    expect(rejected.headers['ratelimit-reset']).toBe(String((START + 3_601_000) / 1000));

    h.clock.advanceTo(START + 3_600_010);
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
