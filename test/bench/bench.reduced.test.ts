import { describe, expect, it } from 'vitest';
import { ceilingOf } from '../../bench/ceiling.js';
import type { RunFigures } from '../../bench/figures.js';
import { simulateDarkroom } from '../../bench/simulate.js';
import { variant, workloadByName } from '../../bench/workloads.js';
import { expectWithinLimits } from '../helpers/bench.js';

/**
 * Issue 3's reduced runs, inside `npm test`: W1 at 1,000 photos (still hour-bound: 3 h
 * of calls against 2.1 h of slots) and W3 whole, each through the real scheduler,
 * pipeline and ledger against the simulator under a virtual clock.
 */

/** Within the limits, and never refused: darkroom meets no 429 of its own. */
function expectUnrefused(f: RunFigures): void {
  expectWithinLimits(f);
  expect(f.rejected429).toBe(0);
}

/** Everything but the wall-clock and memory figures. */
function virtual(f: RunFigures): Omit<RunFigures, 'wallS' | 'peakRssMb'> {
  const { wallS: _w, peakRssMb: _m, ...rest } = f;
  return rest;
}

describe('bench, reduced: W1 (1,000 photos) and W3', () => {
  it('W1: on the hour bound (efficiency ≥ 0.85, ≤ 3.3 calls a photo) within every limit', async () => {
    const w = variant(workloadByName('W1'), { quick: true });
    const f = await simulateDarkroom(w, { seed: 1 });
    expect(f.photos).toBe(1000);
    expect(f.binds).toBe('hour');
    expect(f.done + f.notDone).toBe(1000);
    expectUnrefused(f);
    expect(f.efficiency).toBeGreaterThanOrEqual(0.85);
    expect(f.callsPerPhoto).toBeLessThanOrEqual(3.3);
  });

  it('W3: within every limit, all done, close to the best any client could do on these tasks; a seed replays it exactly', async () => {
    const w = workloadByName('W3');
    const f = await simulateDarkroom(w, { seed: 1 });
    expect(f.done).toBe(300);
    expectUnrefused(f);
    // W3's 300 tasks fit the hour's 1,000 calls only with at most 1.33 polls a task, and
    // the slots bind: with 3 slots, every second a task sits finished-but-unpolled costs
    // the run a third of a second. Even a client that knows the latency model exactly and
    // polls optimally (bench/ceiling.ts) reaches 0.78 on these tasks (its lag at that
    // budget is ~1.3 s a task, against 5.8 s of latency). Issue 3 asks 0.85, above that
    // bound; what can be asked of darkroom is to be close to it.
    const best = ceilingOf(w, 1)!.efficiency;
    expect(best).toBeLessThan(0.85);
    expect(f.efficiency).toBeGreaterThanOrEqual(0.95 * best);

    const again = await simulateDarkroom(w, { seed: 1 });
    expect(virtual(again)).toEqual(virtual(f));
  });
});
