import { afterEach, describe, expect, it } from 'vitest';
import type { WireRequest, WireResponse } from '../../src/api/index.js';
import { simulate } from '../helpers/simulate.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

/** Counts, from the wire: photos uploaded and not yet created, and tasks created and not yet seen ended. */
function watcher() {
  let waiting = 0;
  let running = 0;
  const aheadWhileFull: number[] = [];
  const intercept = async (req: WireRequest, forward: () => Promise<WireResponse>) => {
    const res = await forward();
    if (res.status !== 200) return res;
    if (req.url.endsWith('/image/upload')) waiting++;
    else if (req.url.endsWith('/generate')) {
      waiting--;
      running++;
    } else if (req.method === 'GET' && /"status":"(SUCCESS|FAIL)"/.test(res.body.toString())) running--;
    if (running >= 3) aheadWhileFull.push(waiting);
    return res;
  };
  return { intercept, aheadWhileFull };
}

describe('uploads ahead of the slots (issue 16)', () => {
  it('on a key the hour does not pace, up to 3 photos wait uploaded while every slot is busy, and each is uploaded once', async () => {
    const w = watcher();
    const r = await simulate({
      photos: 12,
      steps: [{ capability: 'enhance' }],
      extra: { limits: { callsPerMinute: 20 } },
      sim: { latency: { medianMs: 60_000, sigma: 0.1 } },
      intercept: w.intercept,
    });
    cleanups.push(r.job.cleanup);
    expect(r.result.status).toMatchObject({ total: 12, done: 12 });
    const k = Object.values(r.audit.keys)[0]!;
    expect(k.uploads).toBe(12);
    expect(k.maxCallsInAnyMinute).toBeLessThanOrEqual(20);
    // one waits for the next free slot, as before; two more use room no poll wanted
    expect(Math.max(...w.aheadWhileFull)).toBe(3);
  });
});
