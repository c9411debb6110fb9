import { FormData, request } from 'undici';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fingerprintKey } from '../../src/spec/key.js';
import { startSim, type RunningSim } from '../../src/sim/server.js';
import { KEY, START, testImage, virtualTime, type Harness } from './helpers.js';

let h: Harness;
let sim: RunningSim;
beforeEach(async () => {
  h = virtualTime();
  sim = await startSim({ keys: [KEY], seed: 5, latency: { medianMs: 4000, sigma: 0 } });
});
afterEach(async () => {
  await sim.close();
  h.restore();
});

async function json(res: Awaited<ReturnType<typeof request>>): Promise<any> {
  return JSON.parse(await res.body.text());
}

describe('the HTTP simulator', () => {
  it('listens on 127.0.0.1, API and results on different ports', () => {
    const api = new URL(sim.apiUrl);
    const results = new URL(sim.resultUrl);
    expect(api.hostname).toBe('127.0.0.1');
    expect(results.hostname).toBe('127.0.0.1');
    expect(api.port).not.toBe(results.port);
  });

  it('answers 401 without a key, with the requestId in body and header', async () => {
    const res = await request(`${sim.apiUrl}/api/v1/credits`);
    expect(res.statusCode).toBe(401);
    const body = await json(res);
    expect(body.code).toBe(-1);
    expect(body.message).toMatch(/invalid or inactive/);
    expect(typeof body.requestId).toBe('string');
    expect(res.headers['x-request-id']).toBe(body.requestId);
  });

  it('runs upload → create → poll → download end to end, and records a key sent to the result origin', async () => {
    const form = new FormData();
    form.append('image', new Blob([await testImage(32, 24)], { type: 'image/png' }), 'photo.png');
    const up = await request(`${sim.apiUrl}/api/v1/image/upload`, {
      method: 'POST',
      body: form,
      headers: { 'x-api-key': KEY, 'x-request-id': 'up-1' },
    });
    const upBody = await json(up);
    expect(up.statusCode).toBe(200);
    expect(upBody.requestId).toBe('up-1');
    expect(upBody.data.imageUrl.startsWith(`${sim.resultUrl}/uploads/`)).toBe(true);

    const created = await request(`${sim.apiUrl}/api/v1/upscale/generate`, {
      method: 'POST',
      body: JSON.stringify({ image: upBody.data.imageUrl, resolution: '8K' }),
      headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
    });
    const createdBody = await json(created);
    expect(created.statusCode).toBe(200);
    const taskId = createdBody.data.taskId as string;

    h.clock.advanceTo(START + 4000);
    const polled = await request(`${sim.apiUrl}/api/v1/tasks/UPSCALE/${taskId}`, { headers: { 'x-api-key': KEY } });
    const pollBody = await json(polled);
    expect(pollBody.data.status).toBe('SUCCESS');
    const resultUrl = pollBody.data.generateUrl as string;
    expect(resultUrl.startsWith(`${sim.resultUrl}/results/`)).toBe(true);

    const clean = await request(resultUrl);
    expect(clean.statusCode).toBe(200);
    expect(clean.headers['content-type']).toBe('image/jpeg');
    expect((await clean.body.arrayBuffer()).byteLength).toBeGreaterThan(0);
    let audit = await json(await request(`${sim.apiUrl}/__sim/audit`));
    expect(audit.keyLeaks).toEqual([]);

    h.clock.advanceTo(START + 5000);
    const leaky = await request(resultUrl, { headers: { 'x-api-key': KEY } });
    expect(leaky.statusCode).toBe(200); // still served: the leak is recorded, not prevented
    await leaky.body.dump();
    audit = await json(await request(`${sim.apiUrl}/__sim/audit`));
    expect(audit.keyLeaks).toEqual([{ path: new URL(resultUrl).pathname, atMs: START + 5000, keyFingerprint: fingerprintKey(KEY) }]);
    expect(JSON.stringify(audit)).not.toContain(KEY);
    const k = audit.keys[fingerprintKey(KEY)];
    expect(k).toMatchObject({ calls: 3, accepted: 3, uploads: 1, creates: 1, polls: 1, maxActiveTasks: 1, activeNow: 0 });
  });

  it('answers HEAD on the result origin with the length and no body', async () => {
    const form = new FormData();
    const bytes = await testImage(16, 16);
    form.append('image', new Blob([bytes]), 'p.png');
    const up = await json(
      await request(`${sim.apiUrl}/api/v1/image/upload`, { method: 'POST', body: form, headers: { 'x-api-key': KEY } }),
    );
    const head = await request(up.data.imageUrl, { method: 'HEAD' });
    expect(head.statusCode).toBe(200);
    expect(head.headers['content-length']).toBe(String(bytes.length));
    await head.body.dump();
  });

  it('fetches an external http image URL for a create and counts it as its own source', async () => {
    const other = await startSim({ keys: ['other'], seed: 1 });
    try {
      const form = new FormData();
      form.append('image', new Blob([await testImage(16, 16)]), 'p.png');
      const up = await json(
        await request(`${other.apiUrl}/api/v1/image/upload`, { method: 'POST', body: form, headers: { 'x-api-key': 'other' } }),
      );
      const externalUrl = up.data.imageUrl as string;
      const created = await request(`${sim.apiUrl}/api/v1/restore/generate`, {
        method: 'POST',
        body: JSON.stringify({ image: externalUrl }),
        headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
      });
      expect(created.statusCode).toBe(200);
      await created.body.dump();
      const missing = await request(`${sim.apiUrl}/api/v1/restore/generate`, {
        method: 'POST',
        body: JSON.stringify({ image: `${other.resultUrl}/uploads/nothing.png` }),
        headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
      });
      expect(missing.statusCode).toBe(400);
      expect((await json(missing)).code).toBe(-2);
      const audit = sim.model.audit();
      expect(Object.keys(audit.createsPerSource)).toEqual([expect.stringMatching(/^url:[0-9a-f]{16}$/)]);
    } finally {
      await other.close();
    }
  });

  it('closes for real, even with a kept-alive connection', async () => {
    const res = await request(`${sim.apiUrl}/api/v1/credits`, { headers: { 'x-api-key': KEY } });
    await res.body.dump();
    await sim.close();
    await expect(request(`${sim.apiUrl}/api/v1/credits`, { headers: { 'x-api-key': KEY } })).rejects.toThrow();
  });
});
