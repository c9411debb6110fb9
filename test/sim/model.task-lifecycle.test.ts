import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { call, KEY2, newModel, ORIGIN, START, testImage, upload, virtualTime, type Harness } from './helpers.js';

let h: Harness;
beforeEach(() => {
  h = virtualTime();
});
afterEach(() => h.restore());

const fixed = { medianMs: 10_000, sigma: 0 };

describe('task polling', () => {
  it('moves REQUESTED → PENDING → SUCCESS under virtual time, with generateUrl only at the end', async () => {
    const model = newModel({ latency: fixed });
    const image = await upload(model, await testImage());
    const created = await call(model, 'POST', '/api/v1/restore/generate', { json: { image } });
    const taskId = created.body.data.taskId as string;
    const poll = () => call(model, 'GET', `/api/v1/tasks/RESTORE/${taskId}`);

    const first = await poll();
    expect(first.status).toBe(200);
    expect(first.body.data).toEqual({ taskId, status: 'REQUESTED', creation: START, generateUrl: null });
    expect(String(first.body.data.creation)).toHaveLength(13);

    h.clock.advanceTo(START + 999);
    expect((await poll()).body.data.status).toBe('REQUESTED');
    h.clock.advanceTo(START + 1000);
    expect((await poll()).body.data.status).toBe('PENDING');
    h.clock.advanceTo(START + 9_999);
    const pending = await poll();
    expect(pending.body.data.status).toBe('PENDING');
    expect(pending.body.data.generateUrl).toBeNull();

    h.clock.advanceTo(START + 10_000);
    const done = await poll();
    expect(done.body.data.status).toBe('SUCCESS');
    expect(done.body.data.generateUrl).toBe(`${ORIGIN}/results/${taskId}.jpg`);
    // Any key of the account may poll.
    expect((await call(model, 'GET', `/api/v1/tasks/RESTORE/${taskId}`, { key: KEY2 })).body.data.status).toBe('SUCCESS');
  });

  it.each([
    ['FAIL', { fail: 1 }],
    ['ERROR', { error: 1 }],
    ['OTHER', { other: 1 }],
  ] as const)('ends in %s when the mix says so, without a result URL', async (status, outcomes) => {
    const model = newModel({ latency: fixed, outcomes });
    const image = await upload(model, await testImage());
    const created = await call(model, 'POST', '/api/v1/upscale/generate', { json: { image } });
    h.clock.advanceBy(10_000);
    const done = await call(model, 'GET', `/api/v1/tasks/UPSCALE/${created.body.data.taskId}`);
    expect(done.body.data.status).toBe(status);
    expect(done.body.data.generateUrl).toBeNull();
  });

  it('answers 404/-60404 for the wrong businessType, an unknown one, and an unknown id', async () => {
    const model = newModel();
    const image = await upload(model, await testImage());
    const created = await call(model, 'POST', '/api/v1/restore/generate', { json: { image } });
    const taskId = created.body.data.taskId as string;
    for (const path of [
      `/api/v1/tasks/UNBLUR/${taskId}`,
      `/api/v1/tasks/restore/${taskId}`,
      `/api/v1/tasks/NOPE/${taskId}`,
      `/api/v1/tasks/RESTORE/does-not-exist`,
    ]) {
      const a = await call(model, 'GET', path);
      expect(a.status, path).toBe(404);
      expect(a.body.code, path).toBe(-60404);
      expect(a.body.requestId).toBe(a.headers['x-request-id']);
    }
  });

  it('charges one credit per task, only on SUCCESS, and refuses creates it cannot pay (20601)', async () => {
    const model = newModel({ latency: fixed, credits: 2 });
    const image = await upload(model, await testImage());
    await call(model, 'POST', '/api/v1/restore/generate', { json: { image } });
    await call(model, 'POST', '/api/v1/restore/generate', { json: { image } });
    // Both credits are held by unfinished tasks.
    const broke = await call(model, 'POST', '/api/v1/restore/generate', { json: { image } });
    expect(broke.status).toBe(400);
    expect(broke.body.code).toBe(20601);
    expect((await call(model, 'GET', '/api/v1/credits')).body.data).toEqual({
      totalCredit: 2,
      usedCredit: 0,
      remainingCredit: 2,
    });
    h.clock.advanceBy(10_000);
    expect((await call(model, 'GET', '/api/v1/credits')).body.data).toEqual({
      totalCredit: 2,
      usedCredit: 2,
      remainingCredit: 0,
    });
    expect((await call(model, 'POST', '/api/v1/restore/generate', { json: { image } })).body.code).toBe(20601);
  });

  it('refunds failed tasks: their credit is free again when they end', async () => {
    const model = newModel({ latency: fixed, credits: 1, outcomes: { fail: 1 } });
    const image = await upload(model, await testImage());
    expect((await call(model, 'POST', '/api/v1/restore/generate', { json: { image } })).status).toBe(200);
    expect((await call(model, 'POST', '/api/v1/restore/generate', { json: { image } })).body.code).toBe(20601);
    h.clock.advanceBy(10_000);
    expect((await call(model, 'POST', '/api/v1/restore/generate', { json: { image } })).status).toBe(200);
    expect((await call(model, 'GET', '/api/v1/credits')).body.data.usedCredit).toBe(0);
  });
});
