import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fingerprintKey } from '../../src/spec/key.js';
import { call, KEY, KEY2, newModel, START, testImage, upload, virtualTime, type Harness } from './helpers.js';

let h: Harness;
beforeEach(() => {
  h = virtualTime();
});
afterEach(() => h.restore());

const fixed = { medianMs: 10_000, sigma: 0 };

describe('active-task slots', () => {
  it('rejects a 4th concurrent create with api_key_active_tasks and admits it once a task ends', async () => {
    const model = newModel({ latency: fixed });
    const image = await upload(model, await testImage());
    for (let i = 0; i < 3; i++) {
      h.clock.advanceTo(START + i * 1000);
      const a = await call(model, 'POST', '/api/v1/restore/generate', { json: { image } });
      expect(a.status).toBe(200);
    }
    h.clock.advanceTo(START + 5000);
    const rejected = await call(model, 'POST', '/api/v1/restore/generate', { json: { image } });
    expect(rejected.status).toBe(429);
    expect(rejected.body.code).toBe(-1000);
    expect(rejected.headers['ratelimit-scope']).toBe('api_key_active_tasks');
    expect(rejected.headers['ratelimit-limit']).toBe('3');
    expect(rejected.headers['ratelimit-remaining']).toBe('0');
    // The first task (accepted at START, 10 s latency) is the first to free a slot.
    expect(rejected.headers['retry-after']).toBe('5');
    expect(rejected.headers['ratelimit-reset']).toBe(String((START + 10_000) / 1000));

    // Other keys have their own slots.
    expect((await call(model, 'POST', '/api/v1/restore/generate', { key: KEY2, json: { image } })).status).toBe(200);

    h.clock.advanceTo(START + 9_999);
    expect((await call(model, 'POST', '/api/v1/restore/generate', { json: { image } })).status).toBe(429);
    h.clock.advanceTo(START + 10_000);
    expect((await call(model, 'POST', '/api/v1/restore/generate', { json: { image } })).status).toBe(200);
    expect((await call(model, 'POST', '/api/v1/restore/generate', { json: { image } })).status).toBe(429);

    const k = model.audit().keys[fingerprintKey(KEY)]!;
    expect(k.maxActiveTasks).toBe(3);
    expect(k.activeNow).toBe(3);
    expect(k.creates).toBe(4);
    expect(k.rejectedByScope).toEqual({ api_key_active_tasks: 3 });
  });

  it('applies the slot limit to creates only: polls and uploads go through with full slots', async () => {
    const model = newModel({ latency: fixed });
    const image = await upload(model, await testImage());
    let taskId = '';
    for (let i = 0; i < 3; i++) {
      const a = await call(model, 'POST', '/api/v1/unblur/generate', { json: { image } });
      taskId = a.body.data.taskId;
    }
    expect((await call(model, 'GET', `/api/v1/tasks/UNBLUR/${taskId}`)).status).toBe(200);
    await upload(model, await testImage(10, 10));
  });

  it('frees the slot of a task that failed, too', async () => {
    const model = newModel({ latency: fixed, outcomes: { fail: 1 } });
    const image = await upload(model, await testImage());
    for (let i = 0; i < 3; i++) await call(model, 'POST', '/api/v1/upscale/generate', { json: { image } });
    h.clock.advanceBy(10_000);
    expect((await call(model, 'POST', '/api/v1/upscale/generate', { json: { image } })).status).toBe(200);
  });
});
