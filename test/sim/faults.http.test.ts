/**
 * Socket-level faults over real loopback HTTP: a create whose connection is dropped after
 * the request was read, an answer slower than the client's timeout, a result body shorter
 * than its Content-Length.
 */
import { FormData, request } from 'undici';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { undiciTransport } from '../../src/api/transport.js';
import type { FaultConfig } from '../../src/sim/faults.js';
import { startSim, type RunningSim } from '../../src/sim/server.js';
import { KEY, START, testImage, virtualTime, type Harness } from './helpers.js';
import { TransportError } from '../../src/errors.js';

let h: Harness;
let sim: RunningSim | undefined;
beforeEach(() => {
  h = virtualTime();
});
afterEach(async () => {
  await sim?.close();
  sim = undefined;
  h.restore();
});

async function start(faults: FaultConfig): Promise<RunningSim> {
  sim = await startSim({ keys: [KEY], seed: 3, latency: { medianMs: 4_000, sigma: 0 }, faults });
  return sim;
}

async function uploadOver(s: RunningSim): Promise<string> {
  const form = new FormData();
  form.append('image', new Blob([await testImage(32, 24)], { type: 'image/png' }), 'photo.png');
  const res = await request(`${s.apiUrl}/api/v1/image/upload`, { method: 'POST', body: form, headers: { 'x-api-key': KEY } });
  const body = JSON.parse(await res.body.text());
  expect(res.statusCode).toBe(200);
  return body.data.imageUrl as string;
}

function createOpts(image: string, requestId: string) {
  return {
    method: 'POST' as const,
    body: JSON.stringify({ image }),
    headers: { 'x-api-key': KEY, 'content-type': 'application/json', 'x-request-id': requestId },
  };
}

describe('fault: dropped create over HTTP', () => {
  it('closes the socket unanswered after reading the request; the task exists', async () => {
    const s = await start({ droppedCreate: { probability: 1 } });
    const image = await uploadOver(s);
    const err = await request(`${s.apiUrl}/api/v1/restore/generate`, createOpts(image, 'http-drop-1')).then(
      () => undefined,
      (e: unknown) => e as { code?: string },
    );
    expect(err?.code).toBe('UND_ERR_SOCKET'); // undici: "other side closed", no status line

    const audit = s.model.audit();
    expect(audit.tasks).toBe(1);
    expect(audit.tasksByStatus).toEqual({ REQUESTED: 1 });
    expect(Object.values(audit.createsPerSource)).toEqual([1]);
    expect(audit.faultedCreates.map((f) => [f.fault, f.sentRequestId])).toEqual([['droppedCreate', 'http-drop-1']]);

    // The project's transport sees it as "may have reached the service".
    const transport = undiciTransport();
    try {
      const sent = await transport.send({ url: `${s.apiUrl}/api/v1/restore/generate`, ...createOpts(image, 'http-drop-2') }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(sent).toBeInstanceOf(TransportError);
      expect((sent as TransportError).sent).toBe(true);
    } finally {
      await transport.close();
    }
    expect(s.model.audit().tasks).toBe(2);
  });
});

describe('fault: slow answer over HTTP', () => {
  it('outlasts a short client headersTimeout; the create was accepted before the wait', async () => {
    const s = await start({ slowAnswer: { probability: 1, createsOnly: true } });
    const image = await uploadOver(s);
    const err = await request(`${s.apiUrl}/api/v1/restore/generate`, { ...createOpts(image, 'http-slow-1'), headersTimeout: 300 }).then(
      () => undefined,
      (e: unknown) => e as { code?: string },
    );
    expect(err?.code).toBe('UND_ERR_HEADERS_TIMEOUT');
    const audit = s.model.audit();
    expect(audit.tasks).toBe(1);
    expect(audit.faultedCreates.map((f) => [f.fault, f.sentRequestId])).toEqual([['slowAnswer', 'http-slow-1']]);
    // Let the held answer go out to the closed socket: nothing breaks.
    h.clock.advanceBy(35_000);
  });

  it('sends the answer once 35 s of (virtual) time have passed', async () => {
    const s = await start({ slowAnswer: { probability: 1, createsOnly: true } });
    const image = await uploadOver(s);
    const pending = request(`${s.apiUrl}/api/v1/restore/generate`, createOpts(image, 'http-slow-2'));
    await vi.waitFor(() => expect(s.model.audit().tasks).toBe(1));
    h.clock.advanceBy(34_999);
    let answered = false;
    void pending.then(
      () => (answered = true),
      () => (answered = true),
    );
    await new Promise((r) => setImmediate(r));
    expect(answered).toBe(false);
    h.clock.advanceTo(START + 35_000);
    const res = await pending;
    expect(res.statusCode).toBe(200);
    const body = JSON.parse(await res.body.text());
    expect(body.requestId).toBe('http-slow-2');
    expect(body.data.taskId).toBe(s.model.audit().faultedCreates[0]!.taskId);
  });
});

describe('fault: truncated download over HTTP', () => {
  it('declares the full Content-Length, sends fewer bytes and closes; the retry gets it whole', async () => {
    const s = await start({ truncatedDownload: { probability: 1 } });
    const image = await uploadOver(s);
    const created = await request(`${s.apiUrl}/api/v1/restore/generate`, createOpts(image, 'c-1'));
    const taskId = JSON.parse(await created.body.text()).data.taskId as string;
    h.clock.advanceTo(START + 4_000);
    const polled = await request(`${s.apiUrl}/api/v1/tasks/RESTORE/${taskId}`, { headers: { 'x-api-key': KEY } });
    const url = JSON.parse(await polled.body.text()).data.generateUrl as string;

    const res = await request(url);
    expect(res.statusCode).toBe(200);
    const declared = Number(res.headers['content-length']);
    let received = 0;
    let failure: unknown;
    try {
      for await (const chunk of res.body) received += (chunk as Buffer).length;
    } catch (e) {
      failure = e;
    }
    expect((failure as { code?: string } | undefined)?.code).toBe('UND_ERR_SOCKET');
    expect(received).toBeGreaterThan(0);
    expect(received).toBeLessThan(declared);

    const again = await request(url);
    const whole = Buffer.from(await again.body.arrayBuffer());
    expect(whole.length).toBe(declared);
    expect(s.model.audit().faults.truncatedDownload).toBe(1);
  });
});
