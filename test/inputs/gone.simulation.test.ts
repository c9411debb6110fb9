import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { VirtualClock } from '../../src/clock.js';
import { Ledger } from '../../src/ledger/index.js';
import { SimModel } from '../../src/sim/model.js';
import { makeJob, writePhoto } from '../helpers/job.js';
import { SIM_KEY, simulate } from '../helpers/simulate.js';
import { corruptZlibPng } from './damaged.js';

/**
 * Issue 12, point 10: a photo whose file was deleted before it was done is reported as gone
 * (a count in status and the run's summary), not left pending or skipped forever; when the
 * file comes back, so does the photo.
 */

const cleanups: (() => void)[] = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

describe('inputs deleted since the last run', () => {
  it('are gone, not pending or skipped; a done photo stays done; a file that comes back is its photo again', async () => {
    const job = await makeJob({ photos: 0, steps: [{ capability: 'enhance' }], baseUrl: 'http://sim.invalid' });
    cleanups.push(job.cleanup);
    const inp = (rel: string) => path.join(job.inputDir, rel);
    for (const [i, rel] of ['a.jpg', 'b.jpg', 'sub/c.jpg'].entries()) await writePhoto(inp(rel), i);
    writeFileSync(inp('bad.png'), await corruptZlibPng());
    const kept = { c: readFileSync(inp('sub/c.jpg')), bad: readFileSync(inp('bad.png')) };
    const ledger = Ledger.open(':memory:');
    cleanups.push(() => ledger.close());
    const model = new SimModel({ keys: [SIM_KEY], seed: 1, resultOrigin: 'http://results.invalid', processing: 'passthrough' });
    const clock = new VirtualClock(Date.UTC(2026, 10, 22, 20, 0, 0));
    const uploads = () => Object.values(model.audit().keys)[0]?.uploads ?? 0;
    const stateOf = (rel: string) => ledger.items.all().find((i) => i.rel_path === rel)?.state;

    // Run 1 is interrupted before its first call: three photos queued, the damaged one skipped.
    const stop = new AbortController();
    stop.abort();
    const r1 = await simulate({ job, ledger, model, clock, signal: stop.signal });
    expect(r1.result.exitCode).toBe(130);
    expect(r1.result.status).toMatchObject({ total: 3, pending: 3, skipped: 1, gone: 0 });

    // c (queued) and bad.png (skipped) are deleted before run 2.
    rmSync(inp('sub/c.jpg'));
    rmSync(inp('bad.png'));
    const r2 = await simulate({ job, ledger, model, clock });
    expect(r2.result.exitCode).toBe(0);
    expect(r2.result.status).toMatchObject({ total: 2, done: 2, failed: 0, skipped: 0, held: 0, pending: 0, gone: 2 });
    expect(r2.result.status.states.gone).toBe(2);
    expect(stateOf('sub/c.jpg')).toBe('gone');
    expect(stateOf('bad.png')).toBe('gone');
    expect(r2.result.status.problems).toEqual([]);
    expect(uploads()).toBe(2);

    // Both come back (same bytes), a.jpg (done) is deleted: c is processed, bad.png is skipped again, a stays done.
    writeFileSync(inp('sub/c.jpg'), kept.c);
    writeFileSync(inp('bad.png'), kept.bad);
    rmSync(inp('a.jpg'));
    const r3 = await simulate({ job, ledger, model, clock });
    expect(r3.result.status).toMatchObject({ total: 3, done: 3, skipped: 1, pending: 0, gone: 0 });
    expect(stateOf('sub/c.jpg')).toBe('done');
    expect(stateOf('a.jpg')).toBe('done');
    expect(r3.result.status.problems.map((p) => `${p.path} ${p.state}: ${p.reason}`)).toEqual([
      expect.stringMatching(/^bad\.png skipped: truncated or damaged PNG/),
    ]);
    expect(uploads()).toBe(3);
    expect(Object.values(model.audit().createsPerSource)).toEqual([1, 1, 1]);
  });
});
