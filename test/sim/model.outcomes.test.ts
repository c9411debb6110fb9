import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SimModel } from '../../src/sim/model.js';
import { call, newModel, testImage, upload, virtualTime, type Harness } from './helpers.js';

let h: Harness;
beforeEach(() => {
  h = virtualTime();
});
afterEach(() => h.restore());

const roomy = { callsPerMinute: 1e6, callsPerHour: 1e7, activeTasks: 1e6 };
const global = { callsPerMinute: 1e6, callsPerHour: 1e7 };
const mix = { fail: 0.1, error: 0.05, other: 0.05 };

async function run(model: SimModel, image: string, n: number): Promise<Array<{ taskId: string; status: string; wait: number }>> {
  const created: Array<{ taskId: string; wait: number }> = [];
  for (let i = 0; i < n; i++) {
    const a = await call(model, 'POST', '/api/v1/enhance/generate', { json: { image } });
    created.push({ taskId: a.body.data.tasks[0].taskId, wait: a.body.data.tasks[0].asyncTaskQueueVO.waitTime });
  }
  h.clock.advanceBy(24 * 3_600_000);
  const out = [];
  for (const c of created) {
    const p = await call(model, 'GET', `/api/v1/tasks/ENHANCE/${c.taskId}`);
    out.push({ ...c, status: p.body.data.status as string });
  }
  return out;
}

describe('outcome mix', () => {
  it('is roughly honoured over 1000 tasks', async () => {
    const model = newModel({ seed: 42, limits: roomy, global, outcomes: mix });
    const image = await upload(model, await testImage());
    const results = await run(model, image, 1000);
    const count = (s: string) => results.filter((r) => r.status === s).length;
    // Binomial standard deviations are about 9.5 (10%) and 6.9 (5%); allow four of them.
    expect(count('FAIL')).toBeGreaterThan(100 - 38);
    expect(count('FAIL')).toBeLessThan(100 + 38);
    expect(count('ERROR')).toBeGreaterThan(50 - 28);
    expect(count('ERROR')).toBeLessThan(50 + 28);
    expect(count('OTHER')).toBeGreaterThan(50 - 28);
    expect(count('OTHER')).toBeLessThan(50 + 28);
    expect(count('SUCCESS') + count('FAIL') + count('ERROR') + count('OTHER')).toBe(1000);
    expect(model.audit().tasksByStatus).toEqual({
      SUCCESS: count('SUCCESS'),
      FAIL: count('FAIL'),
      ERROR: count('ERROR'),
      OTHER: count('OTHER'),
    });
  });

  it('is exactly reproducible for the same seed and differs for another', async () => {
    // Each run starts from a fresh virtual clock so the call sequences are identical.
    const runWith = async (seed: number) => {
      h.restore();
      h = virtualTime();
      const model = newModel({ seed, limits: roomy, global, outcomes: mix });
      const image = await upload(model, await testImage());
      return { results: await run(model, image, 300), image };
    };
    const a = await runWith(7);
    const b = await runWith(7);
    const c = await runWith(8);
    expect(b).toEqual(a);
    expect(c.results.map((r) => r.status)).not.toEqual(a.results.map((r) => r.status));
  });

  it('draws task latencies lognormally around the configured median', async () => {
    const model = newModel({ seed: 3, limits: roomy, global, latency: { medianMs: 30_000, sigma: 0.5 }, waitTimeHint: { noiseSigma: 0 } });
    const image = await upload(model, await testImage());
    const waits: number[] = [];
    for (let i = 0; i < 400; i++) {
      const a = await call(model, 'POST', '/api/v1/enhance/generate', { json: { image } });
      waits.push(a.body.data.tasks[0].asyncTaskQueueVO.waitTime);
    }
    waits.sort((x, y) => x - y);
    expect(waits[200]!).toBeGreaterThan(26_000);
    expect(waits[200]!).toBeLessThan(34_000);
    // sigma 0.5: the 84th percentile sits near median × e^0.5 ≈ 49,500 ms.
    expect(waits[336]!).toBeGreaterThan(40_000);
    expect(waits[336]!).toBeLessThan(60_000);
  });
});
