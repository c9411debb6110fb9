import { afterEach, describe, expect, it } from 'vitest';
import type { WireRequest, WireResponse } from '../../../src/api/index.js';
import { simulate } from '../../helpers/simulate.js';
import { look as query } from '../../helpers/ledger.js';
import { Ledger } from '../../../src/ledger/index.js';
import { makeJob } from '../../helpers/job.js';

/**
 * Issue 12, point 7: an upload the service no longer knows. Its create is refused with
 * 400/-2 (nothing created, nothing charged): the photo is uploaded again and created once
 * more. A -2 right after a fresh upload is the request's fault: the photo fails, saying both.
 */

const cleanups: (() => void)[] = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

function paramInvalid(req: WireRequest): WireResponse {
  const requestId = `srv-${req.headers['x-request-id'] ?? 'x'}`;
  return {
    status: 400,
    headers: { 'content-type': 'application/json', 'x-request-id': requestId },
    body: Buffer.from(JSON.stringify({ code: -2, message: 'parameter invalid: image', requestId })),
  };
}

describe('a forgotten upload', () => {
  it('ends with the photo done: one extra upload, the refused create, then one accepted create (one charged task)', async () => {
    const job = await makeJob({ photos: 4, steps: [{ capability: 'enhance' }] });
    const ledger = Ledger.open(job.ledgerFile);
    cleanups.push(job.cleanup, () => ledger.close());
    const r = await simulate({ job, ledger, sim: { faults: { forgottenUpload: { probability: 1 } } } });
    expect(r.result.exitCode).toBe(0);
    expect(r.result.status).toMatchObject({ total: 4, done: 4, failed: 0, held: 0 });
    expect(r.audit.faults.forgottenUpload).toBe(4);
    expect(Object.values(r.audit.uploadsPerSource)).toEqual([2, 2, 2, 2]);
    expect(Object.values(r.audit.createsPerSource)).toEqual([1, 1, 1, 1]);
    expect(r.audit.tasksByStatus).toEqual({ SUCCESS: 4 });
    const subs = query<{ item_id: number; state: string; code: number | null }>(
      job.ledgerFile,
      'SELECT item_id, state, code FROM submissions ORDER BY item_id, id',
    );
    for (let id = 1; id <= 4; id++) {
      expect(subs.filter((s) => s.item_id === id).map((s) => [s.state, s.code])).toEqual([
        ['rejected', -2],
        ['accepted', 0],
      ]);
    }
    expect(query(job.ledgerFile, 'SELECT DISTINCT forgotten_uploads FROM items')).toEqual([{ forgotten_uploads: 1 }]);
    const notes = query<{ note: string }>(
      job.ledgerFile,
      "SELECT note FROM transitions WHERE from_state = 'submitting' AND to_state = 'queued'",
    );
    expect(notes).toHaveLength(4);
    expect(notes[0]!.note).toMatch(/no longer knows the uploaded image .*uploading it again/);
  });

  it('a second -2 right after a fresh upload fails the photo for good, saying both', async () => {
    let creates = 0;
    const r = await simulate({
      photos: 1,
      steps: [{ capability: 'enhance' }],
      intercept: async (req, forward) => (req.url.endsWith('/generate') ? (creates++, paramInvalid(req)) : forward()),
    });
    cleanups.push(r.job.cleanup);
    expect(r.result.status).toMatchObject({ total: 1, done: 0, failed: 1 });
    expect(r.result.exitCode).toBe(1);
    expect(creates).toBe(2);
    expect(Object.values(r.audit.uploadsPerSource)).toEqual([2]);
    expect(r.result.status.problems[0]!.reason).toMatch(/refused twice \(-2.*forgotten.*again right after a fresh upload/);
  });

  it('once a fresh upload was refused, a -2 on that step fails the other photos at once (no upload and create more each)', async () => {
    let creates = 0;
    const r = await simulate({
      photos: 8,
      steps: [{ capability: 'enhance' }],
      intercept: async (req, forward) => (req.url.endsWith('/generate') ? (creates++, paramInvalid(req)) : forward()),
    });
    cleanups.push(r.job.cleanup);
    expect(r.result.status).toMatchObject({ total: 8, failed: 8 });
    const uploads = Object.values(r.audit.uploadsPerSource).reduce((a, b) => a + b, 0);
    // without the rule: 16 uploads and 16 creates
    expect(creates).toBeLessThan(16);
    expect(uploads).toBeLessThan(16);
  });

  it('a -2 on a later step (a result passed on, not our upload) fails the photo at once, no upload again', async () => {
    let creates = 0;
    const r = await simulate({
      photos: 2,
      steps: [{ capability: 'restore' }, { capability: 'colorize' }],
      intercept: async (req, forward) => (req.url.includes('/colorize/') ? (creates++, paramInvalid(req)) : forward()),
    });
    cleanups.push(r.job.cleanup);
    expect(r.result.status).toMatchObject({ total: 2, failed: 2 });
    expect(creates).toBe(2);
    expect(Object.values(r.audit.uploadsPerSource)).toEqual([1, 1]);
    expect(r.result.status.problems.every((p) => /^create refused: /.test(p.reason ?? ''))).toBe(true);
  });
});
