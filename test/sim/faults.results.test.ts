/**
 * Faults of the result origin, in-process: URLs that expire (by age or at random) and are
 * replaced by the next poll, and downloads shorter than their Content-Length.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { inProcessResultFetch } from '../../src/sim/inprocess.js';
import type { SimModel } from '../../src/sim/model.js';
import { newModel, START, testImage, virtualTime, type Harness } from './helpers.js';
import { getResult, parse, raw, uploadRaw } from './faults.helpers.js';

let h: Harness;
beforeEach(() => {
  h = virtualTime();
});
afterEach(() => h.restore());

const fixed = { medianMs: 5_000, sigma: 0 };

/** A restore task that succeeds at START + 5 s; returns its id and a poll function. */
async function succeeded(model: SimModel): Promise<{ taskId: string; poll: () => Promise<string> }> {
  const image = await uploadRaw(model, await testImage());
  const taskId = parse(await raw(model, 'POST', '/api/v1/restore/generate', { json: { image } })).data.taskId as string;
  h.clock.advanceTo(START + 5_000);
  const poll = async () => {
    const body = parse(await raw(model, 'GET', `/api/v1/tasks/RESTORE/${taskId}`));
    expect(body.data.status).toBe('SUCCESS');
    return body.data.generateUrl as string;
  };
  return { taskId, poll };
}

describe('fault: result URLs that expire', () => {
  it('expires a URL afterMs after SUCCESS; a fresh poll hands out ?v=2, which works', async () => {
    const model = newModel({ latency: fixed, faults: { expiredResultUrl: { afterMs: 60_000, statuses: [410] } } });
    const { taskId, poll } = await succeeded(model);
    const v1 = await poll();
    expect(v1).toBe(`${model.resultOrigin}/results/${taskId}.jpg`);
    h.clock.advanceTo(START + 5_000 + 59_999);
    const fine = await getResult(model, v1);
    expect(fine.status).toBe(200);

    h.clock.advanceTo(START + 5_000 + 60_000);
    expect((await getResult(model, v1)).status).toBe(410);
    const v2 = await poll();
    expect(v2).toBe(`${v1}?v=2`);
    const again = await getResult(model, v2);
    expect(again.status).toBe(200);
    expect(again.body.equals(fine.body)).toBe(true);
    // The old URL stays dead; the new one lives afterMs from the poll that issued it.
    expect((await getResult(model, v1)).status).toBe(410);
    h.clock.advanceBy(60_000);
    expect((await getResult(model, v2)).status).toBe(410);
    expect(await poll()).toBe(`${v1}?v=3`);
    expect(model.audit().faults.expiredResultUrl).toBe(3);
  });

  it('expires a first URL at random with 403, 404 or 410; the re-issued URL does not expire at random', async () => {
    const model = newModel({ latency: fixed, faults: { expiredResultUrl: { probability: 1 } } });
    const { poll } = await succeeded(model);
    const v1 = await poll();
    const dead = await getResult(model, v1);
    expect([403, 404, 410]).toContain(dead.status);
    // The same status every time for the same URL.
    expect((await getResult(model, v1)).status).toBe(dead.status);
    const v2 = await poll();
    expect(v2).toBe(`${v1}?v=2`);
    for (let i = 0; i < 3; i++) expect((await getResult(model, v2)).status).toBe(200);
    expect(model.audit().faults.expiredResultUrl).toBe(2);
  });

  it('answers 404 for a version never issued', async () => {
    const model = newModel({ latency: fixed, faults: { expiredResultUrl: { probability: 1 } } });
    const { poll } = await succeeded(model);
    const v1 = await poll();
    expect((await getResult(model, `${v1}?v=7`)).status).toBe(404);
    expect((await getResult(model, `${v1}?v=x`)).status).toBe(404);
  });
});

describe('fault: truncated result downloads (in-process)', () => {
  it('declares the full Content-Length but returns fewer bytes, never twice in a row', async () => {
    const model = newModel({ latency: fixed, faults: { truncatedDownload: { probability: 1 } } });
    const { poll } = await succeeded(model);
    const fetch = inProcessResultFetch(model);
    const url = new URL(await poll());

    const short = await fetch(url);
    expect(short.status).toBe(200);
    const declared = Number(short.headers['content-length']);
    expect(short.body.length).toBeGreaterThan(0);
    expect(short.body.length).toBeLessThan(declared);

    const whole = await fetch(url);
    expect(whole.body.length).toBe(declared);
    expect(whole.body.subarray(0, short.body.length).equals(short.body)).toBe(true);

    expect((await fetch(url)).body.length).toBeLessThan(declared); // probability 1: the next one is short again
    expect(model.audit().faults.truncatedDownload).toBe(2);
  });

  it('leaves HEAD and uploads alone', async () => {
    const model = newModel({ latency: fixed, faults: { truncatedDownload: { probability: 1 } } });
    const bytes = await testImage();
    const image = await uploadRaw(model, bytes);
    const up = await getResult(model, image);
    expect(up.body.equals(bytes)).toBe(true);
    const { poll } = await succeeded(model);
    const head = await getResult(model, await poll(), 'HEAD');
    expect(head.status).toBe(200);
    expect(head.truncated).toBeUndefined();
    expect(model.audit().faults.truncatedDownload).toBe(0);
  });
});
