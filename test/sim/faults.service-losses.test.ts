/**
 * The simulator's service-side losses (issue 12, point 7): an upload the service forgets,
 * and API calls answered with a redirect to another origin.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fingerprintKey } from '../../src/spec/key.js';
import { resolveFaults } from '../../src/sim/faults.js';
import { KEY, newModel, testImage, virtualTime, type Harness } from './helpers.js';
import { getResult, parse, raw, uploadRaw } from './faults.helpers.js';

let h: Harness;
beforeEach(() => {
  h = virtualTime();
});
afterEach(() => h.restore());

const fp = fingerprintKey(KEY);
const create = (model: ReturnType<typeof newModel>, image: string) => raw(model, 'POST', '/api/v1/restore/generate', { json: { image } });

describe('forgottenUpload', () => {
  it('answers 400/-2 without a task, keeps that URL failing, and a fresh upload of the same image works', async () => {
    const model = newModel({ faults: { forgottenUpload: { probability: 1 } } });
    const bytes = await testImage();
    const first = await uploadRaw(model, bytes);
    const refused = await create(model, first);
    expect(refused.status).toBe(400);
    expect(parse(refused)).toMatchObject({ code: -2 });
    expect((await create(model, first)).status).toBe(400);
    expect((await getResult(model, first)).status).toBe(404);
    // at most once per source image: the fresh upload stays, even at probability 1
    const second = await uploadRaw(model, bytes);
    const accepted = await create(model, second);
    expect(accepted.status).toBe(200);
    const audit = model.audit();
    expect(audit.faults.forgottenUpload).toBe(1);
    expect(audit.tasks).toBe(1);
    expect(audit.keys[fp]!.creates).toBe(1);
  });

  it('never touches an image given by URL or a result passed on', async () => {
    const model = newModel({ faults: { forgottenUpload: { probability: 1 } } });
    const refused = await create(model, `${model.resultOrigin}/results/nothing.jpg`);
    expect(parse(refused)).toMatchObject({ code: -2 });
    expect(model.audit().faults.forgottenUpload).toBe(0);
  });
});

describe('redirect', () => {
  it('answers every call with the status and a Location on the other origin, counted per key and in no window', async () => {
    const model = newModel({ faults: { redirect: { to: 'https://moved.example/v2', status: 308 } } });
    const res = await raw(model, 'GET', '/api/v1/credits?x=1');
    expect(res.status).toBe(308);
    expect(res.headers.location).toBe('https://moved.example/v2/api/v1/credits?x=1');
    expect((await raw(model, 'GET', '/api/v1/usage')).status).toBe(308);
    const k = model.audit().keys[fp]!;
    expect(k).toMatchObject({ calls: 2, redirected: 2, accepted: 0 });
    expect(model.audit().faults.redirect).toBe(2);
  });

  it('with calls and times: only the first upload, then the service answers as usual', async () => {
    const model = newModel({ faults: { redirect: { to: 'http://127.0.0.1:9', calls: 'upload', times: 1 } } });
    expect((await raw(model, 'GET', '/api/v1/credits')).status).toBe(200);
    const bytes = await testImage();
    await expect(uploadRaw(model, bytes)).rejects.toThrow(/upload failed: 307/);
    expect(await uploadRaw(model, bytes)).toMatch(/\/uploads\//);
    expect(model.audit().keys[fp]).toMatchObject({ calls: 3, redirected: 1, accepted: 2 });
  });

  it('is checked when resolved', () => {
    expect(() => resolveFaults({ redirect: { to: 'ftp://x' } })).toThrow(/redirect.to/);
    expect(() => resolveFaults({ redirect: { to: 'https://x', status: 200 as never } })).toThrow(/redirect.status/);
    expect(resolveFaults('hostile').redirect).toBeNull();
  });
});
