/**
 * Faults that answer API calls in-process: 503 bursts, spurious 429s, 24403 in a 200,
 * malformed JSON, vanishing tasks. Each forced with an explicit config, one behaviour each.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fingerprintKey } from '../../src/spec/key.js';
import type { KnownRateLimitScope } from '../../src/spec/scopes.js';
import { KEY, newModel, START, testImage, virtualTime, type Harness } from './helpers.js';
import { NO_FAULTS, parse, raw, uploadRaw } from './faults.helpers.js';

let h: Harness;
beforeEach(() => {
  h = virtualTime();
});
afterEach(() => h.restore());

const fixed = { medianMs: 10_000, sigma: 0 };
const fp = fingerprintKey(KEY);

describe('fault: 503 bursts', () => {
  it('answers every call in a burst 503/-1000 with Retry-After counting down, and audits each answer', async () => {
    const model = newModel({ faults: { burst503: { probability: 1, minMs: 20_000, maxMs: 20_000 } } });
    const first = await raw(model, 'GET', '/api/v1/credits');
    expect(first.status).toBe(503);
    expect(parse(first)).toMatchObject({ code: -1000, data: null });
    expect(first.headers['retry-after']).toBe('20');
    expect(first.headers['x-request-id']).toBe(parse(first).requestId);

    h.clock.advanceTo(START + 5_500);
    const later = await raw(model, 'GET', '/api/v1/usage');
    expect(later.status).toBe(503);
    expect(later.headers['retry-after']).toBe('15'); // 14.5 s left, rounded up

    const audit = model.audit();
    expect(audit.bursts503).toEqual([{ fromMs: START, untilMs: START + 20_000 }]);
    expect(audit.faults.burst503).toBe(2);
    expect(audit.keys[fp]).toMatchObject({ calls: 2, answered503: 2, accepted: 0, rejected429: 0 });
  });

  it('lets calls between bursts through, and every call inside one gets a 503', async () => {
    const model = newModel({
      limits: { callsPerMinute: 1000, callsPerHour: 100_000 },
      faults: { burst503: { probability: 0.05, minMs: 5_000, maxMs: 15_000 } },
    });
    const answers: Array<{ at: number; status: number }> = [];
    for (let i = 0; i < 600; i++) {
      h.clock.advanceTo(START + i * 1000);
      answers.push({ at: START + i * 1000, status: (await raw(model, 'GET', '/api/v1/credits')).status });
    }
    const { bursts503 } = model.audit();
    expect(bursts503.length).toBeGreaterThan(3);
    const inBurst = (at: number) => bursts503.some((b) => at >= b.fromMs && at < b.untilMs);
    for (const a of answers) expect(a.status).toBe(inBurst(a.at) ? 503 : 200);
    expect(answers.filter((a) => a.status === 200).length).toBeGreaterThan(300);
  });
});

describe('fault: spurious 429', () => {
  const callScopes: KnownRateLimitScope[] = ['api_key_minute', 'api_key_hour', 'global_minute', 'global_hour'];

  it.each(callScopes)('rejects a first call with scope %s and full RateLimit headers', async (scope) => {
    const model = newModel({ faults: { spurious429: { probability: 1, scopes: [scope], withHeaders: 1 } } });
    const res = await raw(model, 'GET', '/api/v1/credits');
    expect(res.status).toBe(429);
    expect(parse(res)).toMatchObject({ code: -1000, data: null });
    const limit = { api_key_minute: '100', api_key_hour: '1000', global_minute: '10000', global_hour: '50000' }[scope as string];
    expect(res.headers['ratelimit-scope']).toBe(scope);
    expect(res.headers['ratelimit-limit']).toBe(limit);
    expect(res.headers['ratelimit-remaining']).toBe('0');
    const retryAfter = Number(res.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(10);
    expect(res.headers['ratelimit-reset']).toBe(String(START / 1000 + retryAfter));
  });

  it('rejects a create with scope api_key_active_tasks while no task is active', async () => {
    const model = newModel({ faults: { spurious429: { probability: 1, scopes: ['api_key_active_tasks'], withHeaders: 1 } } });
    const image = `${model.resultOrigin}/uploads/nothing.png`;
    const res = await raw(model, 'POST', '/api/v1/restore/generate', { json: { image } });
    expect(res.status).toBe(429);
    expect(res.headers['ratelimit-scope']).toBe('api_key_active_tasks');
    expect(res.headers['ratelimit-limit']).toBe('3');
    expect(model.audit().keys[fp]!.activeNow).toBe(0);
  });

  it('never gives api_key_active_tasks to a call that is not a create', async () => {
    const model = newModel({ faults: { spurious429: { probability: 1, scopes: ['api_key_active_tasks'] } } });
    expect((await raw(model, 'GET', '/api/v1/credits')).status).toBe(200);
    expect(model.audit().faults.spurious429).toBe(0);
  });

  it('can come with no RateLimit or Retry-After header at all', async () => {
    const model = newModel({ faults: { spurious429: { probability: 1, withHeaders: 0 } } });
    const res = await raw(model, 'GET', '/api/v1/credits', { headers: { 'x-request-id': 'bare-429' } });
    expect(res.status).toBe(429);
    expect(parse(res)).toMatchObject({ code: -1000, requestId: 'bare-429' });
    const names = Object.keys(res.headers);
    expect(names.filter((n) => n.startsWith('ratelimit-') || n === 'retry-after')).toEqual([]);
    expect(res.headers['x-request-id']).toBe('bare-429');
  });

  it('is audited apart from real 429s and counts in the windows like them', async () => {
    const model = newModel({ limits: { callsPerMinute: 2 }, faults: { spurious429: { probability: 1 } } });
    for (let i = 0; i < 5; i++) expect((await raw(model, 'GET', '/api/v1/credits')).status).toBe(429);
    const k = model.audit().keys[fp]!;
    // The first two are injected and fill the window of two; the real limit refuses the rest.
    expect(k).toMatchObject({ calls: 5, accepted: 0, rejected429: 3, rejectedByScope: { api_key_minute: 3 }, injected429: 2 });
    expect(model.audit().faults.spurious429).toBe(2);
  });
});

describe('fault: 24403 inside an HTTP 200', () => {
  it('answers a valid create with the published shape, no requestId, and creates nothing', async () => {
    const model = newModel({ faults: { notSubscribed200: { probability: 1 } } });
    const image = await uploadRaw(model, await testImage());
    const res = await raw(model, 'POST', '/api/v1/enhance/generate', { json: { image }, headers: { 'x-request-id': 'sub-1' } });
    expect(res.status).toBe(200);
    expect(parse(res)).toEqual({ code: 24403, message: 'not subscribed or out of the subscription period' });
    expect(res.headers['x-request-id']).toBeUndefined();
    const audit = model.audit();
    expect(audit.tasks).toBe(0);
    expect(audit.createsPerSource).toEqual({});
    expect(audit.faults).toEqual({ ...NO_FAULTS, notSubscribed200: 1 });
  });

  it('still answers an invalid create with its 400', async () => {
    const model = newModel({ faults: { notSubscribed200: { probability: 1 } } });
    const res = await raw(model, 'POST', '/api/v1/enhance/generate', { json: {} });
    expect(res.status).toBe(400);
    expect(parse(res).code).toBe(-2);
  });
});

describe('fault: malformed JSON on a 200', () => {
  it('cuts a create answer to invalid JSON after the task was really created', async () => {
    const model = newModel({ latency: fixed, faults: { malformedJson: { probability: 1, createsOnly: true } } });
    const image = await uploadRaw(model, await testImage());
    const res = await raw(model, 'POST', '/api/v1/restore/generate', { json: { image }, headers: { 'x-request-id': 'create-1' } });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.body.toString('utf8').startsWith('{"code":0')).toBe(true);
    expect(() => JSON.parse(res.body.toString('utf8'))).toThrow(SyntaxError);

    const audit = model.audit();
    expect(audit.tasks).toBe(1);
    expect(Object.values(audit.createsPerSource)).toEqual([1]);
    expect(audit.keys[fp]!.activeNow).toBe(1);
    expect(audit.faultedCreates).toEqual([
      {
        fault: 'malformedJson',
        sentRequestId: 'create-1',
        requestId: 'create-1',
        taskId: expect.any(String),
        sourceId: expect.any(String),
        atMs: START,
      },
    ]);
    const taskId = audit.faultedCreates[0]!.taskId;
    const polled = await raw(model, 'GET', `/api/v1/tasks/RESTORE/${taskId}`);
    expect(parse(polled).data).toMatchObject({ taskId, status: 'REQUESTED' });
  });

  it('strikes any endpoint, but only answers that are HTTP 200', async () => {
    const model = newModel({ faults: { malformedJson: { probability: 1 } } });
    const credits = await raw(model, 'GET', '/api/v1/credits');
    expect(credits.status).toBe(200);
    expect(() => JSON.parse(credits.body.toString('utf8'))).toThrow(SyntaxError);
    const missing = await raw(model, 'GET', '/api/v1/tasks/RESTORE/nope');
    expect(missing.status).toBe(404);
    expect(parse(missing).code).toBe(-60404);
    expect(model.audit().faults.malformedJson).toBe(1);
    expect(model.audit().faultedCreates).toEqual([]);
  });
});

describe('fault: vanishing tasks', () => {
  it('answers a poll of an existing task 404/-60404, frees its slot, and never charges it', async () => {
    const model = newModel({ latency: fixed, limits: { activeTasks: 1 }, credits: 5, faults: { vanishedTask: { probability: 1 } } });
    const image = await uploadRaw(model, await testImage());
    const created = parse(await raw(model, 'POST', '/api/v1/restore/generate', { json: { image } }));
    const taskId = created.data.taskId as string;
    expect(model.audit().keys[fp]!.activeNow).toBe(1);

    h.clock.advanceTo(START + 2_000);
    const gone = await raw(model, 'GET', `/api/v1/tasks/RESTORE/${taskId}`);
    expect(gone.status).toBe(404);
    expect(parse(gone).code).toBe(-60404);
    expect((await raw(model, 'GET', `/api/v1/tasks/RESTORE/${taskId}`)).status).toBe(404);
    expect(model.audit().keys[fp]!.activeNow).toBe(0);

    // The slot is free at once: a second create fits under activeTasks = 1.
    const again = parse(await raw(model, 'POST', '/api/v1/restore/generate', { json: { image } }));
    expect(again.code).toBe(0);
    h.clock.advanceTo(START + 2_000 + 10_000);
    // Survivability rule: the same source and capability lose at most one task.
    const second = await raw(model, 'GET', `/api/v1/tasks/RESTORE/${again.data.taskId}`);
    expect(parse(second).data.status).toBe('SUCCESS');

    const audit = model.audit();
    expect(audit.faults.vanishedTask).toBe(1);
    expect(audit.tasks).toBe(2);
    expect(audit.tasksByStatus).toEqual({ SUCCESS: 1 });
    expect(parse(await raw(model, 'GET', '/api/v1/credits')).data).toEqual({ totalCredit: 5, usedCredit: 1, remainingCredit: 4 });
  });

  it('waits for minAgeMs before a task may vanish', async () => {
    const model = newModel({ latency: fixed, faults: { vanishedTask: { probability: 1, minAgeMs: 5_000 } } });
    const image = await uploadRaw(model, await testImage());
    const taskId = parse(await raw(model, 'POST', '/api/v1/restore/generate', { json: { image } })).data.taskId as string;
    h.clock.advanceTo(START + 4_999);
    expect((await raw(model, 'GET', `/api/v1/tasks/RESTORE/${taskId}`)).status).toBe(200);
    h.clock.advanceTo(START + 5_000);
    expect((await raw(model, 'GET', `/api/v1/tasks/RESTORE/${taskId}`)).status).toBe(404);
  });
});
