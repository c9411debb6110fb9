import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { call, newModel, testImage, upload, virtualTime, type Harness } from './helpers.js';

let h: Harness;
beforeEach(() => {
  h = virtualTime();
});
afterEach(() => h.restore());

describe('creation responses', () => {
  it('enhance answers parentTaskId, tasks[] with queue info, and queueStatus PENDING', async () => {
    const model = newModel({ latency: { medianMs: 8000, sigma: 0 }, waitTimeHint: { noiseSigma: 0 } });
    const image = await upload(model, await testImage());
    const a = await call(model, 'POST', '/api/v1/enhance/generate', { json: { image, mode: 'portrait' } });
    expect(a.status).toBe(200);
    expect(a.body.code).toBe(0);
    const d = a.body.data;
    expect(Object.keys(d).sort()).toEqual(['parentTaskId', 'queueStatus', 'tasks']);
    expect(typeof d.parentTaskId).toBe('string');
    expect(d.queueStatus).toBe('PENDING');
    expect(d.tasks).toHaveLength(1);
    expect(typeof d.tasks[0].taskId).toBe('string');
    expect(d.tasks[0].asyncTaskQueueVO).toEqual({ rank: 1, waitTime: 8000 });
  });

  it('image2image answers asyncTaskQueueVO with an integer asyncTaskId, polled as IMAGE_TO_IMAGE', async () => {
    const model = newModel();
    const image = await upload(model, await testImage());
    const a = await call(model, 'POST', '/api/v1/image2image/generate', {
      json: { image, style: 'sepia', prompt: 'warm afternoon', negativePrompt: 'blur' },
    });
    expect(a.status).toBe(200);
    const vo = a.body.data.asyncTaskQueueVO;
    expect(Object.keys(a.body.data)).toEqual(['asyncTaskQueueVO']);
    expect(Number.isInteger(vo.asyncTaskId)).toBe(true);
    expect(Number.isInteger(vo.rank)).toBe(true);
    expect(Number.isInteger(vo.waitTime)).toBe(true);
    const poll = await call(model, 'GET', `/api/v1/tasks/IMAGE_TO_IMAGE/${vo.asyncTaskId}`);
    expect(poll.status).toBe(200);
    expect(poll.body.data.taskId).toBe(String(vo.asyncTaskId));
  });

  it('restore, unblur and upscale answer flat {taskId, businessType, status}', async () => {
    const model = newModel({ limits: { activeTasks: 10 } });
    const image = await upload(model, await testImage());
    const cases = [
      ['/api/v1/restore/generate', 'RESTORE', {}],
      ['/api/v1/unblur/generate', 'UNBLUR', { mode: 'text' }],
      ['/api/v1/upscale/generate', 'UPSCALE', { resolution: '8K', mode: 'general' }],
    ] as const;
    for (const [path, businessType, extra] of cases) {
      const a = await call(model, 'POST', path, { json: { image, ...extra } });
      expect(a.status).toBe(200);
      expect(a.body.data).toEqual({ taskId: expect.any(String), businessType, status: 'PENDING' });
    }
  });

  it('colorize and background removal omit businessType; the poll takes COLORIZE / REMOVE_BACKGROUND', async () => {
    const model = newModel();
    const image = await upload(model, await testImage());
    for (const [path, businessType] of [
      ['/api/v1/colorize/generate', 'COLORIZE'],
      ['/api/v1/background/remove/generate', 'REMOVE_BACKGROUND'],
    ] as const) {
      const a = await call(model, 'POST', path, { json: { image } });
      expect(a.status).toBe(200);
      expect(a.body.data).toEqual({ taskId: expect.any(String), status: 'PENDING' });
      expect((await call(model, 'GET', `/api/v1/tasks/${businessType}/${a.body.data.taskId}`)).status).toBe(200);
    }
  });

  it('answers waitTime 0 when the hint is turned off, and a noisy hint around the latency otherwise', async () => {
    const off = newModel({ waitTimeHint: 'none' });
    const image = await upload(off, await testImage());
    const a = await call(off, 'POST', '/api/v1/enhance/generate', { json: { image } });
    expect(a.body.data.tasks[0].asyncTaskQueueVO.waitTime).toBe(0);

    const noisy = newModel({
      latency: { medianMs: 20_000, sigma: 0 },
      waitTimeHint: { noiseSigma: 0.3 },
      limits: { activeTasks: 1000, callsPerMinute: 1000 },
    });
    const image2 = await upload(noisy, await testImage());
    const waits: number[] = [];
    for (let i = 0; i < 200; i++) {
      const r = await call(noisy, 'POST', '/api/v1/enhance/generate', { json: { image: image2 } });
      waits.push(r.body.data.tasks[0].asyncTaskQueueVO.waitTime);
    }
    waits.sort((x, y) => x - y);
    const median = waits[100]!;
    expect(median).toBeGreaterThan(16_000);
    expect(median).toBeLessThan(25_000);
    expect(new Set(waits).size).toBeGreaterThan(100);
  });
});
