import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { simulate } from '../helpers/simulate.js';
import { TransportError } from '../../src/errors.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

describe('a whole run against the in-process simulator under a virtual clock', () => {
  it('finishes every photo within the limits, one create per photo', async () => {
    const r = await simulate({ photos: 40, steps: [{ capability: 'enhance' }], sim: { latency: { medianMs: 20_000, sigma: 0.5 } } });
    cleanups.push(r.job.cleanup);
    expect(r.result.exitCode).toBe(0);
    expect(r.result.status).toMatchObject({ total: 40, done: 40, failed: 0, held: 0, pending: 0 });
    const k = Object.values(r.audit.keys)[0]!;
    expect(k.maxCallsInAnyMinute).toBeLessThanOrEqual(100);
    expect(k.maxCallsInAnyHour).toBeLessThanOrEqual(1000);
    expect(k.maxActiveTasks).toBeLessThanOrEqual(3);
    expect(k.rejected429).toBe(0);
    expect(Object.values(r.audit.createsPerSource)).toHaveLength(40);
    expect(Object.values(r.audit.createsPerSource).every((n) => n === 1)).toBe(true);
    for (const rel of r.job.sizes.keys()) {
      const out = path.join(r.job.outputDir, rel.replace(/\.[a-z]+$/, ''));
      expect(readdirSync(path.dirname(out)).some((f) => f.startsWith(path.basename(out) + '.'))).toBe(true);
    }
  });

  it('is exactly reproducible for a seed', async () => {
    const opts = { photos: 12, steps: [{ capability: 'enhance' }], seed: 5, sim: { outcomes: { fail: 0.2 } } };
    const a = await simulate(opts);
    const b = await simulate(opts);
    cleanups.push(a.job.cleanup, b.job.cleanup);
    expect(b.endMs - b.startMs).toBe(a.endMs - a.startMs);
    expect(b.audit.keys).toEqual(a.audit.keys);
    expect(b.result.status.calls.total).toBe(a.result.status.calls.total);
  });

  it('creates a FAILed task again up to maxAttempts, reusing the uploaded image', async () => {
    const r = await simulate({
      photos: 6,
      steps: [{ capability: 'enhance' }],
      extra: { maxAttempts: 3 },
      sim: { outcomes: { fail: 0.5 } },
    });
    cleanups.push(r.job.cleanup);
    const k = Object.values(r.audit.keys)[0]!;
    expect(k.uploads).toBe(6);
    expect(k.creates).toBeGreaterThan(6);
    for (const [, n] of Object.entries(r.audit.createsPerSource)) expect(n).toBeLessThanOrEqual(3);
    expect(r.result.status.done + r.result.status.failed).toBe(6);
    for (const p of r.result.status.problems) expect(p.reason).toMatch(/FAIL on all 3 attempts/);
  });

  it('retries a create refused before it was written, without holding it', async () => {
    let creates = 0;
    const r = await simulate({
      photos: 2,
      steps: [{ capability: 'enhance' }],
      intercept: async (req, forward) => {
        if (req.url.endsWith('/generate') && ++creates === 1) throw new TransportError('connection refused', 'ECONNREFUSED', false);
        return forward();
      },
    });
    cleanups.push(r.job.cleanup);
    expect(r.result.status).toMatchObject({ total: 2, done: 2, held: 0 });
    expect(Object.values(r.audit.createsPerSource)).toEqual([1, 1]);
  });

  it('does nothing for items already done when run again', async () => {
    const first = await simulate({ photos: 5, steps: [{ capability: 'enhance' }] });
    cleanups.push(first.job.cleanup);
    const callsBefore = first.result.status.calls.total;
    const again = await simulate({ job: first.job, ledger: first.ledger, model: first.model, clock: first.clock });
    expect(again.result.status.done).toBe(5);
    expect(again.result.status.calls.total).toBe(callsBefore);
    expect(again.result.discovered).toMatchObject({ added: 0, known: 5 });
    expect(existsSync(first.job.outputDir)).toBe(true);
  });
});
