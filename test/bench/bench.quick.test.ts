import { describe, expect, it } from 'vitest';
import type { RunFigures } from '../../bench/figures.js';
import { simulateNaive } from '../../bench/naive.js';
import { simulateDarkroom } from '../../bench/simulate.js';
import { withPhotos, workloadByName } from '../../bench/workloads.js';
import { expectWithinLimits } from '../helpers/bench.js';

/** Within the limits, and an efficiency a run can have (T* is a bound: a little over 1 only by the task draws). */
function expectSane(f: RunFigures): void {
  expectWithinLimits(f);
  expect(f.efficiency).toBeGreaterThan(0);
  expect(f.efficiency).toBeLessThanOrEqual(1.05);
}

describe('bench: small workloads through darkroom and the naive client', () => {
  it('W1-shaped, 60 photos: every photo ends, within the limits, and the naive client is measured beside it', async () => {
    const w = withPhotos(workloadByName('W1'), 60);
    const ours = await simulateDarkroom(w, { seed: 3 });
    expect(ours.done + ours.notDone).toBe(60);
    expectSane(ours);
    expect(ours.calls).toBeGreaterThanOrEqual(3 * 60);

    const naive = await simulateNaive(w, { seed: 3 });
    expect(naive.client).toBe('naive');
    expect(naive.done + naive.notDone).toBe(60);
    expect(naive.efficiency).toBeGreaterThan(0);
    expect(naive.callsPerPhoto).toBeGreaterThan(ours.callsPerPhoto);
  });

  it('W3-shaped, 30 photos: all succeed within the limits', async () => {
    const ours = await simulateDarkroom(withPhotos(workloadByName('W3'), 30), { seed: 3 });
    expect(ours.done).toBe(30);
    expectSane(ours);
  });

  // Several lanes share the unclaimed photos: a lane claims one in the same tick it picks
  // it (Items.claimQueued), so no two lanes can take the same photo.
  it('several keys: each key stays within its own limits', async () => {
    const ours = await simulateDarkroom(withPhotos(workloadByName('W4'), 40), { seed: 3 });
    expect(ours.keys).toBe(5);
    expect(ours.done + ours.notDone).toBe(40);
    expectSane(ours);
  });
});
