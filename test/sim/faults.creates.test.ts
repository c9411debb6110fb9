/**
 * Creates that are accepted but whose answer the client never reads, in-process: the
 * transport must fail the way a real socket would, with `sent: true`, while the task exists.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fingerprintKey } from '../../src/spec/key.js';
import { type WireRequest } from '../../src/spec/wire.js';
import { clock } from '../../src/clock.js';
import { inProcessTransport } from '../../src/sim/inprocess.js';
import type { SimModel } from '../../src/sim/model.js';
import { KEY, newModel, START, testImage, virtualTime, type Harness } from './helpers.js';
import { parse, raw, uploadRaw } from './faults.helpers.js';
import { TransportError } from '../../src/errors.js';

let h: Harness;
beforeEach(() => {
  h = virtualTime();
});
afterEach(() => h.restore());

const fp = fingerprintKey(KEY);

function createRequest(image: string, requestId: string, signal?: AbortSignal): WireRequest {
  return {
    method: 'POST',
    url: 'http://sim.invalid/api/v1/restore/generate',
    headers: { 'x-api-key': KEY, 'content-type': 'application/json', 'x-request-id': requestId },
    body: JSON.stringify({ image }),
    ...(signal ? { signal } : {}),
  };
}

/** Drive the virtual clock until the promise settles; its outcome, without unhandled rejections. */
async function settleUnder<T>(p: Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
  let out: { ok: true; value: T } | { ok: false; error: unknown } | undefined;
  p.then(
    (value) => {
      out = { ok: true, value };
    },
    (error: unknown) => {
      out = { ok: false, error };
    },
  );
  await h.clock.run(() => out !== undefined, { maxMs: 3_600_000 });
  return out!;
}

async function modelWithImage(faults: NonNullable<Parameters<typeof newModel>[0]>['faults']): Promise<{ model: SimModel; image: string }> {
  const model = newModel({ latency: { medianMs: 60_000, sigma: 0 }, faults });
  return { model, image: await uploadRaw(model, await testImage()) };
}

describe('fault: dropped create (in-process)', () => {
  it('throws TransportError ECONNRESET with sent: true, and the task is real', async () => {
    const { model, image } = await modelWithImage({ droppedCreate: { probability: 1 } });
    const err = await inProcessTransport(model)
      .send(createRequest(image, 'drop-1'))
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(err).toBeInstanceOf(TransportError);
    expect(err).toMatchObject({ transportCode: 'ECONNRESET', sent: true });

    const audit = model.audit();
    expect(audit.tasks).toBe(1);
    expect(audit.keys[fp]).toMatchObject({ creates: 1, activeNow: 1 });
    expect(Object.values(audit.createsPerSource)).toEqual([1]);
    expect(audit.faults.droppedCreate).toBe(1);
    expect(audit.faultedCreates).toEqual([
      {
        fault: 'droppedCreate',
        sentRequestId: 'drop-1',
        requestId: 'drop-1',
        taskId: expect.any(String),
        sourceId: Object.keys(audit.createsPerSource)[0],
        atMs: START,
      },
    ]);
    const polled = await raw(model, 'GET', `/api/v1/tasks/RESTORE/${audit.faultedCreates[0]!.taskId}`);
    expect(parse(polled).data.status).toBe('REQUESTED');
  });

  it('drops only creates that made a task', async () => {
    const { model } = await modelWithImage({ droppedCreate: { probability: 1 } });
    const res = await inProcessTransport(model).send(createRequest('data:image/png;base64,AAAA', 'bad-1'));
    expect(res.status).toBe(400);
    expect(model.audit().faults.droppedCreate).toBe(0);
  });

  it('lists a create sent without X-Request-Id with sentRequestId null', async () => {
    const { model, image } = await modelWithImage({ droppedCreate: { probability: 1 } });
    const res = await raw(model, 'POST', '/api/v1/restore/generate', { json: { image } });
    expect(res.drop).toBe(true);
    const [entry] = model.audit().faultedCreates;
    expect(entry!.sentRequestId).toBeNull();
    expect(entry!.requestId).toMatch(/^sim-/);
  });
});

describe('fault: slow answer (in-process)', () => {
  it('outlasts the client deadline: ABORTED with sent: true at 30 s, after the task was created', async () => {
    const { model, image } = await modelWithImage({ slowAnswer: { probability: 1, createsOnly: true } });
    const deadline = clock.deadline(30_000);
    const out = await settleUnder(inProcessTransport(model).send(createRequest(image, 'slow-1', deadline.signal)));
    expect(out.ok).toBe(false);
    expect((out as { error: unknown }).error).toBeInstanceOf(TransportError);
    expect((out as { error: unknown }).error).toMatchObject({ transportCode: 'ABORTED', sent: true });
    expect(h.clock.now()).toBe(START + 30_000);
    const audit = model.audit();
    expect(audit.tasks).toBe(1);
    expect(audit.faultedCreates.map((f) => [f.fault, f.sentRequestId])).toEqual([['slowAnswer', 'slow-1']]);
  });

  it('arrives whole after the delay (default 35 s) when nobody gives up', async () => {
    const { model, image } = await modelWithImage({ slowAnswer: { probability: 1, createsOnly: true } });
    const out = await settleUnder(inProcessTransport(model).send(createRequest(image, 'slow-2')));
    expect(out.ok).toBe(true);
    const res = (out as { value: { status: number; body: Buffer } }).value;
    expect(h.clock.now()).toBe(START + 35_000);
    expect(res.status).toBe(200);
    const body = JSON.parse(res.body.toString('utf8'));
    expect(body.data.taskId).toBe(model.audit().faultedCreates[0]!.taskId);
    // The task was accepted when the request arrived, not when the answer left.
    const polled = parse(await raw(model, 'GET', `/api/v1/tasks/RESTORE/${body.data.taskId}`));
    expect(polled.data.creation).toBe(START);
  });

  it('delays by the configured time, and any endpoint unless createsOnly', async () => {
    const model = newModel({ faults: { slowAnswer: { probability: 1, delayMs: 5_000 } } });
    const res = await raw(model, 'GET', '/api/v1/credits');
    expect(res.status).toBe(200);
    expect(res.delayMs).toBe(5_000);
    expect(model.audit().faults.slowAnswer).toBe(1);
    expect(model.audit().faultedCreates).toEqual([]);
  });
});
