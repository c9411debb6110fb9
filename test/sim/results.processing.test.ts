import sharp from 'sharp';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SimModel } from '../../src/sim/model.js';
import { call, newModel, pathOfUrl, pollTarget, testImage, upload, virtualTime, type Harness } from './helpers.js';

let h: Harness;
beforeEach(() => {
  h = virtualTime();
});
afterEach(() => h.restore());

const fixed = { medianMs: 5000, sigma: 0 };

async function runTask(
  model: SimModel,
  path: string,
  businessType: string,
  body: Record<string, unknown>,
): Promise<{ url: string; bytes: Buffer; contentType: string }> {
  const created = await call(model, 'POST', path, { json: body });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  const target = pollTarget(businessType, created.body.data);
  h.clock.advanceBy(5000);
  const done = await call(model, 'GET', `/api/v1/tasks/${target.businessType}/${target.taskId}`);
  expect(done.body.data.status).toBe('SUCCESS');
  const url = done.body.data.generateUrl as string;
  const res = await model.handleResult({ method: 'GET', path: pathOfUrl(url), headers: {}, body: Buffer.alloc(0) });
  expect(res.status).toBe(200);
  return { url, bytes: res.body, contentType: res.headers['content-type']! };
}

async function meanAbsDiff(a: Buffer, b: Buffer): Promise<number> {
  const ra = await sharp(a).removeAlpha().resize(32, 32, { fit: 'fill' }).raw().toBuffer();
  const rb = await sharp(b).removeAlpha().resize(32, 32, { fit: 'fill' }).raw().toBuffer();
  let sum = 0;
  for (let i = 0; i < ra.length; i++) sum += Math.abs(ra[i]! - rb[i]!);
  return sum / ra.length;
}

describe('result processing', () => {
  it('upscales really: ×2 for 4K and by default, ×4 for 8K', async () => {
    const model = newModel({ latency: fixed });
    const image = await upload(model, await testImage(64, 48));
    for (const [resolution, w, h2] of [
      [undefined, 128, 96],
      ['4K', 128, 96],
      ['8K', 256, 192],
    ] as const) {
      const r = await runTask(model, '/api/v1/upscale/generate', 'UPSCALE', { image, ...(resolution ? { resolution } : {}) });
      const meta = await sharp(r.bytes).metadata();
      expect([meta.format, meta.width, meta.height]).toEqual(['jpeg', w, h2]);
      expect(r.contentType).toBe('image/jpeg');
      expect(r.url).toMatch(/\.jpg$/);
    }
  });

  it('removes the background into a PNG with alpha: corner transparent, subject opaque', async () => {
    const model = newModel({ latency: fixed });
    const image = await upload(model, await testImage(64, 48, 'jpeg'));
    const r = await runTask(model, '/api/v1/background/remove/generate', 'REMOVE_BACKGROUND', { image });
    expect(r.url).toMatch(/\.png$/);
    expect(r.contentType).toBe('image/png');
    const { data, info } = await sharp(r.bytes).raw().toBuffer({ resolveWithObject: true });
    expect(info.channels).toBe(4);
    const alphaAt = (x: number, y: number) => data[(y * info.width + x) * 4 + 3];
    expect(alphaAt(0, 0)).toBe(0);
    expect(alphaAt(info.width - 1, info.height - 1)).toBe(0);
    expect(alphaAt(32, 24)).toBe(255);
  });

  it('image2image applies a visible style', async () => {
    const model = newModel({ latency: fixed, limits: { activeTasks: 10 } });
    const input = await testImage(64, 48);
    const image = await upload(model, input);
    for (const style of ['sepia', 'noir', 'vivid', 'sketch']) {
      const r = await runTask(model, '/api/v1/image2image/generate', 'IMAGE_TO_IMAGE', { image, style });
      expect(await meanAbsDiff(r.bytes, input), style).toBeGreaterThan(8);
    }
    const noir = await runTask(model, '/api/v1/image2image/generate', 'IMAGE_TO_IMAGE', { image, style: 'noir' });
    const { data } = await sharp(noir.bytes).raw().toBuffer({ resolveWithObject: true });
    // Greyscale: no pixel keeps the blue square's colour.
    for (let i = 0; i < data.length; i += 3) expect(Math.abs(data[i]! - data[i + 2]!)).toBeLessThan(6);
  });

  it('sketches dark lines on white, also from a PNG with an alpha channel', async () => {
    const model = newModel({ latency: fixed });
    const rgba = await sharp(await testImage(64, 48))
      .ensureAlpha()
      .png()
      .toBuffer();
    const image = await upload(model, rgba);
    const r = await runTask(model, '/api/v1/image2image/generate', 'IMAGE_TO_IMAGE', { image, style: 'sketch' });
    const stats = await sharp(r.bytes).stats();
    expect(stats.channels[0]!.mean).toBeGreaterThan(200);
    expect(stats.channels[0]!.min).toBeLessThan(60);
  });

  it('removes the background of a greyscale PNG too', async () => {
    const model = newModel({ latency: fixed });
    const grey = await sharp(await testImage(64, 48))
      .greyscale()
      .png()
      .toBuffer();
    const image = await upload(model, grey);
    const r = await runTask(model, '/api/v1/background/remove/generate', 'REMOVE_BACKGROUND', { image });
    const { data, info } = await sharp(r.bytes).raw().toBuffer({ resolveWithObject: true });
    expect(info.channels).toBe(4);
    expect(data[3]).toBe(0);
  });

  it('colorizes a grey image into colour', async () => {
    const model = newModel({ latency: fixed });
    const grey = await sharp(await testImage(64, 48))
      .greyscale()
      .png()
      .toBuffer();
    const image = await upload(model, grey);
    const r = await runTask(model, '/api/v1/colorize/generate', 'COLORIZE', { image });
    const stats = await sharp(r.bytes).stats();
    expect(stats.isOpaque).toBe(true);
    expect(Math.abs(stats.channels[0]!.mean - stats.channels[2]!.mean)).toBeGreaterThan(10);
  });

  it('chains a step on a previous result, inheriting its source, and serves the same bytes every time', async () => {
    const model = newModel({ latency: fixed });
    const input = await testImage(40, 30);
    const image = await upload(model, input);
    const restored = await runTask(model, '/api/v1/restore/generate', 'RESTORE', { image });
    const upscaled = await runTask(model, '/api/v1/upscale/generate', 'UPSCALE', { image: restored.url, resolution: '4K' });
    const meta = await sharp(upscaled.bytes).metadata();
    expect([meta.width, meta.height]).toEqual([80, 60]);
    const again = await model.handleResult({ method: 'GET', path: pathOfUrl(upscaled.url), headers: {}, body: Buffer.alloc(0) });
    expect(again.body.equals(upscaled.bytes)).toBe(true);
    const audit = model.audit();
    expect(Object.values(audit.createsPerSource)).toEqual([2]);
    expect(Object.keys(audit.createsPerSource)).toEqual(Object.keys(audit.uploadsPerSource));
  });

  it('gives byte-identical results from another model with the same inputs', async () => {
    const input = await testImage(50, 50);
    const outputs: Buffer[] = [];
    for (let i = 0; i < 2; i++) {
      const model = newModel({ latency: fixed });
      const image = await upload(model, input);
      outputs.push((await runTask(model, '/api/v1/unblur/generate', 'UNBLUR', { image })).bytes);
    }
    expect(outputs[0]!.equals(outputs[1]!)).toBe(true);
  });

  it('serves nothing for a task that has not succeeded, or under the wrong extension', async () => {
    const model = newModel({ latency: fixed });
    const image = await upload(model, await testImage());
    const created = await call(model, 'POST', '/api/v1/restore/generate', { json: { image } });
    const path = `/results/${created.body.data.taskId}.jpg`;
    const get = (p: string) => model.handleResult({ method: 'GET', path: p, headers: {}, body: Buffer.alloc(0) });
    expect((await get(path)).status).toBe(404);
    h.clock.advanceBy(5000);
    expect((await get(path)).status).toBe(200);
    expect((await get(path.replace('.jpg', '.png'))).status).toBe(404);
  });

  it('passes input bytes through untouched in passthrough mode, with the input extension', async () => {
    const model = newModel({ latency: fixed, processing: 'passthrough' });
    const input = await testImage(30, 30, 'webp');
    const image = await upload(model, input);
    const r = await runTask(model, '/api/v1/background/remove/generate', 'REMOVE_BACKGROUND', { image });
    expect(r.url).toMatch(/\.webp$/);
    expect(r.bytes.equals(input)).toBe(true);
  });
});

describe('what the simulator returns looks like its capability did it', () => {
  const mean = async (b: Buffer) => {
    const s = await sharp(b).stats();
    return s.channels.slice(0, 3).reduce((sum, c) => sum + c.mean, 0) / 3;
  };

  it.each(['1950s/beach.jpg', '1950s/street.png', 'family album/grandma.jpg', 'portrait.png'])(
    'restore keeps the brightness of %s (within 3 %) and only clears it',
    async (rel) => {
      const { processImage } = await import('../../src/sim/processing.js');
      const { readFileSync } = await import('node:fs');
      const input = readFileSync(new URL(`../../examples/photos/${rel}`, import.meta.url));
      const before = await mean(input);
      const after = await mean(await processImage('restore', input, {}));
      expect(Math.abs(after - before) / before).toBeLessThan(0.03);
    },
  );
});
