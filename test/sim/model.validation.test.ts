import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fingerprintKey } from '../../src/spec/key.js';
import { call, KEY, multipart, newModel, ORIGIN, testImage, upload, virtualTime, type Harness } from './helpers.js';

let h: Harness;
beforeEach(() => {
  h = virtualTime();
});
afterEach(() => h.restore());

describe('authentication', () => {
  it('answers 401/-1 for a missing or unknown key, with a requestId, counting it in no window', async () => {
    const model = newModel({ limits: { callsPerMinute: 1 } });
    for (const key of [null, 'wrong-key']) {
      const a = await call(model, 'GET', '/api/v1/credits', { key });
      expect(a.status).toBe(401);
      expect(a.body.code).toBe(-1);
      expect(a.body.message).toMatch(/invalid or inactive/);
      expect(a.body.requestId).toMatch(/^[A-Za-z0-9_-]+$/);
      expect(a.headers['x-request-id']).toBe(a.body.requestId);
    }
    expect((await call(model, 'GET', '/api/v1/credits')).status).toBe(200);
    const audit = model.audit();
    expect(audit.unauthorized).toBe(2);
    expect(audit.keys[fingerprintKey('wrong-key')]!.unauthorized).toBe(1);
    expect(audit.keys[fingerprintKey(KEY)]!.calls).toBe(1);
  });

  it('echoes a valid X-Request-Id and replaces an invalid one', async () => {
    const model = newModel();
    const mine = await call(model, 'GET', '/api/v1/credits', { headers: { 'x-request-id': 'job-7_create-2' } });
    expect(mine.body.requestId).toBe('job-7_create-2');
    expect(mine.headers['x-request-id']).toBe('job-7_create-2');
    for (const bad of ['has space', 'x'.repeat(65), 'semi;colon', '']) {
      const a = await call(model, 'GET', '/api/v1/credits', { key: null, headers: { 'x-request-id': bad } });
      expect(a.body.requestId).not.toBe(bad);
      expect(a.body.requestId.length).toBeGreaterThan(0);
      expect(a.headers['x-request-id']).toBe(a.body.requestId);
    }
  });

  it('answers an unknown endpoint 404/-2 after authentication', async () => {
    const model = newModel();
    expect((await call(model, 'GET', '/api/v1/nothing', { key: null })).status).toBe(401);
    const a = await call(model, 'GET', '/api/v1/nothing');
    expect(a.status).toBe(404);
    expect(a.body.code).toBe(-2);
    expect((await call(model, 'GET', '/api/v1/enhance/generate')).status).toBe(404);
  });
});

describe('create validation', () => {
  it('rejects a missing image, base64, data: and non-http inputs with 400/-2', async () => {
    const model = newModel();
    for (const body of [
      {},
      { image: '' },
      { image: 'iVBORw0KGgoAAAANSUhEUg==' },
      { image: 'data:image/png;base64,iVBO' },
      { image: 'ftp://x/y.png' },
      { image: 42 },
    ]) {
      const a = await call(model, 'POST', '/api/v1/restore/generate', { json: body });
      expect(a.status, JSON.stringify(body)).toBe(400);
      expect(a.body.code, JSON.stringify(body)).toBe(-2);
    }
    const notJson = await call(model, 'POST', '/api/v1/restore/generate', { body: Buffer.from('{nope') });
    expect(notJson.body.code).toBe(-2);
  });

  it('rejects sim URLs that name nothing, or a result that is not ready', async () => {
    const model = newModel();
    const missing = await call(model, 'POST', '/api/v1/restore/generate', { json: { image: `${ORIGIN}/uploads/nothing.png` } });
    expect(missing.body.code).toBe(-2);
    const image = await upload(model, await testImage());
    const created = await call(model, 'POST', '/api/v1/restore/generate', { json: { image } });
    const early = await call(model, 'POST', '/api/v1/upscale/generate', {
      json: { image: `${ORIGIN}/results/${created.body.data.taskId}.jpg` },
    });
    expect(early.status).toBe(400);
    expect(early.body.code).toBe(-2);
  });

  it('gives -3 listing the values for an unknown mode, and -2 for mode where it is not accepted', async () => {
    const model = newModel({ limits: { activeTasks: 100 } });
    const image = await upload(model, await testImage());
    const unknown = await call(model, 'POST', '/api/v1/enhance/generate', { json: { image, mode: 'cinematic' } });
    expect(unknown.status).toBe(400);
    expect(unknown.body.code).toBe(-3);
    expect(unknown.body.message).toContain('general, graphics, portrait, text');
    for (const path of ['/api/v1/restore/generate', '/api/v1/colorize/generate', '/api/v1/background/remove/generate']) {
      const a = await call(model, 'POST', path, { json: { image, mode: 'general' } });
      expect(a.body.code, path).toBe(-2);
    }
    const i2i = await call(model, 'POST', '/api/v1/image2image/generate', { json: { image, style: 'noir', mode: 'general' } });
    expect(i2i.body.code).toBe(-2);
    for (const path of ['/api/v1/enhance/generate', '/api/v1/unblur/generate', '/api/v1/upscale/generate']) {
      expect((await call(model, 'POST', path, { json: { image, mode: 'text' } })).status, path).toBe(200);
    }
  });

  it('accepts resolution 4K/8K on upscale only', async () => {
    const model = newModel({ limits: { activeTasks: 100 } });
    const image = await upload(model, await testImage());
    expect((await call(model, 'POST', '/api/v1/upscale/generate', { json: { image, resolution: '4K' } })).status).toBe(200);
    expect((await call(model, 'POST', '/api/v1/upscale/generate', { json: { image, resolution: '8K' } })).status).toBe(200);
    for (const resolution of ['16K', '4k', 4]) {
      const a = await call(model, 'POST', '/api/v1/upscale/generate', { json: { image, resolution } });
      expect(a.status).toBe(400);
      expect(a.body.code).toBe(-2);
    }
    expect((await call(model, 'POST', '/api/v1/restore/generate', { json: { image, resolution: '4K' } })).body.code).toBe(-2);
  });

  it('requires a known style on image2image and string prompts', async () => {
    const model = newModel({ limits: { activeTasks: 100 }, styles: ['sepia', 'noir'] });
    const image = await upload(model, await testImage());
    expect((await call(model, 'POST', '/api/v1/image2image/generate', { json: { image } })).body.code).toBe(-2);
    const unknown = await call(model, 'POST', '/api/v1/image2image/generate', { json: { image, style: 'vivid' } });
    expect(unknown.body.code).toBe(-2);
    expect(unknown.body.message).toContain('sepia, noir');
    expect((await call(model, 'POST', '/api/v1/image2image/generate', { json: { image, style: 'noir', prompt: 7 } })).body.code).toBe(-2);
    expect((await call(model, 'POST', '/api/v1/image2image/generate', { json: { image, style: 'noir', prompt: 'x' } })).status).toBe(200);
  });

  it('answers 24403 with HTTP 400 when the account is not subscribed', async () => {
    const model = newModel({ subscribed: false });
    const image = await upload(model, await testImage());
    const a = await call(model, 'POST', '/api/v1/enhance/generate', { json: { image } });
    expect(a.status).toBe(400);
    expect(a.body.code).toBe(24403);
    expect(a.body.requestId).toBe(a.headers['x-request-id']);
  });
});

describe('upload', () => {
  it('accepts JPG, PNG and WEBP by content, whatever the file name says', async () => {
    const model = newModel();
    for (const [format, ext] of [
      ['jpeg', 'jpg'],
      ['png', 'png'],
      ['webp', 'webp'],
    ] as const) {
      const url = await upload(model, await testImage(20, 20, format));
      expect(url).toMatch(new RegExp(`^${ORIGIN}/uploads/[A-Za-z0-9_-]+\\.${ext}$`));
    }
  });

  it('rejects other content, a missing field and a non-multipart body with 400/-2', async () => {
    const model = newModel();
    const gif = Buffer.from('GIF89a\x01\x00\x01\x00\x00\x00\x00;', 'latin1');
    const cases = [multipart('image', gif), multipart('file', await testImage())];
    for (const { body, contentType } of cases) {
      const a = await call(model, 'POST', '/api/v1/image/upload', { body, headers: { 'content-type': contentType } });
      expect(a.status).toBe(400);
      expect(a.body.code).toBe(-2);
    }
    const json = await call(model, 'POST', '/api/v1/image/upload', { json: { image: 'x' } });
    expect(json.body.code).toBe(-2);
    const truncated = multipart('image', await testImage());
    const cut = await call(model, 'POST', '/api/v1/image/upload', {
      body: truncated.body.subarray(0, truncated.body.length - 20),
      headers: { 'content-type': truncated.contentType },
    });
    expect(cut.body.code).toBe(-2);
  });

  it('serves the uploaded bytes from the result origin, without a key', async () => {
    const model = newModel();
    const bytes = await testImage();
    const url = await upload(model, bytes);
    const res = await model.handleResult({ method: 'GET', path: new URL(url).pathname, headers: {}, body: Buffer.alloc(0) });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('image/png');
    expect(res.body.equals(bytes)).toBe(true);
  });
});
