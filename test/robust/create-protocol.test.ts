import { readFileSync, writeFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { type WireResponse } from '../../src/api/index.js';
import { Ledger } from '../../src/ledger/index.js';
import { makeJob } from '../helpers/job.js';
import { simulate } from '../helpers/simulate.js';
import { createsPerPhoto } from './helpers.js';
import { look as query } from '../helpers/ledger.js';
import { discovered } from '../helpers/discovered.js';
import { TransportError } from '../../src/errors.js';

/**
 * Issue 4, point 1: the create protocol (L1, L2). A failure before the request was written
 * is retried; one after it (reset, timeout, 500, garbled answer) holds the photo and is
 * never resent on its own; a row still `sending` when a run starts is held too.
 */

const cleanups: (() => void)[] = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

const isCreate = (url: string) => url.endsWith('/generate');

function serverError(requestId: string): WireResponse {
  return {
    status: 500,
    headers: { 'content-type': 'application/json', 'x-request-id': requestId },
    body: Buffer.from(JSON.stringify({ code: -1, message: 'internal server error', requestId })),
  };
}

describe('a create that fails before its request is written', () => {
  it.each([
    ['ECONNREFUSED', 'connection refused'],
    ['ENOTFOUND', 'DNS'],
    ['UND_ERR_CONNECT_TIMEOUT', 'connect timeout'],
  ])('(%s, %s) is retried, and the photo is created exactly once', async (code) => {
    let n = 0;
    const r = await simulate({
      photos: 3,
      steps: [{ capability: 'enhance' }],
      intercept: async (req, forward) => {
        if (isCreate(req.url) && ++n <= 2) throw new TransportError(`${code} before the request was sent`, code, false);
        return forward();
      },
    });
    cleanups.push(r.job.cleanup);
    expect(r.result.status).toMatchObject({ total: 3, done: 3, held: 0, failed: 0 });
    expect(Object.values(r.audit.createsPerSource)).toEqual([1, 1, 1]);
  });
});

describe('a create whose outcome is unknown', () => {
  it('after a reset once the request was written: held, never resent, with the X-Request-Id sent', async () => {
    let n = 0;
    const r = await simulate({
      photos: 3,
      steps: [{ capability: 'enhance' }],
      intercept: async (req, forward) => {
        if (isCreate(req.url) && ++n === 1) {
          await forward(); // the service made the task...
          throw new TransportError('socket reset after the request was written', 'ECONNRESET', true); // ...the answer is lost
        }
        return forward();
      },
    });
    cleanups.push(r.job.cleanup);
    expect(r.result.status).toMatchObject({ total: 3, done: 2, held: 1 });
    expect(r.result.exitCode).toBe(1);
    expect(Object.values(r.audit.createsPerSource).sort()).toEqual([1, 1, 1]);
    const held = r.result.status.problems.find((p) => p.state === 'held')!;
    expect(held.sentRequestId).toMatch(/^dr-[0-9a-f]{32}$/);
    expect(held.reason).toMatch(/outcome unknown/);
    const subs = r.ledger.submissions.forItem(held.id);
    expect(subs.map((s) => s.state)).toEqual(['ambiguous']);
    expect(subs[0]!.request_id).toBe(held.sentRequestId);
  });

  it('on an unexpected 500: held, with the requestId the service gave', async () => {
    let n = 0;
    const r = await simulate({
      photos: 2,
      steps: [{ capability: 'enhance' }],
      intercept: async (req, forward) => (isCreate(req.url) && ++n === 1 ? serverError('srv-500-abc') : forward()),
    });
    cleanups.push(r.job.cleanup);
    expect(r.result.status).toMatchObject({ total: 2, done: 1, held: 1 });
    const held = r.result.status.problems.find((p) => p.state === 'held')!;
    expect(held.requestId).toBe('srv-500-abc');
    expect(held.sentRequestId).toMatch(/^dr-/);
  });

  it.each([
    ['an answer slower than the client timeout', { slowAnswer: { probability: 1, createsOnly: true } }],
    ['a dropped connection', { droppedCreate: { probability: 1 } }],
    ['malformed JSON', { malformedJson: { probability: 1, createsOnly: true } }],
  ])('after %s (simulator fault): every photo held, one create each, none resent', async (_what, faults) => {
    const r = await simulate({ photos: 3, steps: [{ capability: 'enhance' }], sim: { faults } });
    cleanups.push(r.job.cleanup);
    expect(r.result.status).toMatchObject({ total: 3, done: 0, held: 3, pending: 0 });
    expect(Object.values(r.audit.createsPerSource)).toEqual([1, 1, 1]);
    expect(r.audit.faultedCreates.map((f) => f.sentRequestId).sort()).toEqual(r.result.status.problems.map((p) => p.sentRequestId).sort());
  });

  it('left `sending` by a run that died: held when the next run starts, never sent again', async () => {
    const job = await makeJob({ photos: 3, steps: [{ capability: 'enhance' }] });
    cleanups.push(job.cleanup);
    // What a run killed between L1's write and the answer leaves behind.
    const seeded = Ledger.open(job.ledgerFile);
    const rel = [...job.sizes.keys()][0]!;
    const src = `${job.inputDir}/${rel}`;
    discovered(seeded, [{ relPath: rel, srcPath: src, content: readFileSync(src) }]);
    seeded.items.move(1, 'queued', 'uploading', { key_fp: 'k_dead' });
    seeded.items.move(1, 'uploading', 'uploaded', { input_url: 'http://results.invalid/uploads/u1.jpg' });
    seeded.submissions.begin(seeded.items.get(1)!, 'enhance', 'k_dead', 'dr-killed-mid-create');
    seeded.close();

    const ledger = Ledger.open(job.ledgerFile);
    const r = await simulate({ job, ledger });
    cleanups.push(() => ledger.close());
    expect(r.result.recovered.ambiguous).toBe(1);
    expect(r.result.status).toMatchObject({ total: 3, done: 2, held: 1 });
    const held = r.result.status.problems[0]!;
    expect(held).toMatchObject({ path: rel, state: 'held', sentRequestId: 'dr-killed-mid-create' });
    expect(held.reason).toMatch(/the run stopped while it was in flight/);
    // The simulator never saw it: neither an upload nor a create for that photo.
    expect(createsPerPhoto(job, [rel], r.audit.createsPerSource)[rel]).toBe(0);
    expect(query(job.ledgerFile, "SELECT state FROM submissions WHERE request_id = 'dr-killed-mid-create'")).toEqual([
      { state: 'ambiguous' },
    ]);
  });
});

describe('onAmbiguous: resubmit', () => {
  it('sends an ambiguous create again on its own, and records both', async () => {
    let n = 0;
    const r = await simulate({
      photos: 3,
      steps: [{ capability: 'enhance' }],
      extra: { onAmbiguous: 'resubmit' },
      intercept: async (req, forward) => {
        if (isCreate(req.url) && ++n === 1) {
          await forward();
          throw new TransportError('socket reset after the request was written', 'ECONNRESET', true);
        }
        return forward();
      },
    });
    cleanups.push(r.job.cleanup);
    expect(r.result.status).toMatchObject({ total: 3, done: 3, held: 0 });
    // The operator chose this: the photo whose answer was lost was charged twice.
    expect(Object.values(r.audit.createsPerSource).sort()).toEqual([1, 1, 2]);
    const twice = r.ledger.items.all().find((i) => r.ledger.submissions.forItem(i.id).length === 2)!;
    expect(r.ledger.submissions.forItem(twice.id).map((s) => s.state)).toEqual(['ambiguous', 'accepted']);
  });

  it('also resubmits what an earlier run left held, once the config says so', async () => {
    const job = await makeJob({ photos: 2, steps: [{ capability: 'enhance' }] });
    cleanups.push(job.cleanup);
    const ledger = Ledger.open(job.ledgerFile);
    cleanups.push(() => ledger.close());
    let n = 0;
    const first = await simulate({
      job,
      ledger,
      intercept: async (req, forward) => {
        if (isCreate(req.url) && ++n === 1) {
          await forward();
          throw new TransportError('socket reset after the request was written', 'ECONNRESET', true);
        }
        return forward();
      },
    });
    expect(first.result.status).toMatchObject({ done: 1, held: 1 });
    writeFileSync(job.jobsFile, readFileSync(job.jobsFile, 'utf8') + 'onAmbiguous: resubmit\n');
    const second = await simulate({ job, ledger, model: first.model, clock: first.clock });
    expect(second.result.status).toMatchObject({ total: 2, done: 2, held: 0 });
    expect(Object.values(second.audit.createsPerSource).sort()).toEqual([1, 2]);
  });

  it('resends at most maxAttempts times per step, then holds', async () => {
    const r = await simulate({
      photos: 2,
      steps: [{ capability: 'enhance' }],
      extra: { onAmbiguous: 'resubmit', maxAttempts: 2 },
      sim: { faults: { droppedCreate: { probability: 1 } } },
    });
    cleanups.push(r.job.cleanup);
    expect(r.result.status).toMatchObject({ total: 2, done: 0, held: 2 });
    expect(Object.values(r.audit.createsPerSource)).toEqual([2, 2]);
    for (const p of r.result.status.problems) expect(p.reason).toMatch(/outcome unknown/);
  });
});
