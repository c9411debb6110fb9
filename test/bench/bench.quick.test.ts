import { describe, expect, it } from 'vitest';
import type { RunFigures } from '../../bench/figures.js';
import { simulateNaive } from '../../bench/naive.js';
import { simulateDarkroom } from '../../bench/simulate.js';
import { withPhotos, workloadByName } from '../../bench/workloads.js';

function expectWithinLimits(f: RunFigures): void {
  // From the simulator's audit: what the service saw, not what the client counted.
  expect(f.maxCallsPerMinute).toBeLessThanOrEqual(100);
  expect(f.maxCallsPerHour).toBeLessThanOrEqual(1000);
  expect(f.maxActive).toBeLessThanOrEqual(3);
  expect(f.efficiency).toBeGreaterThan(0);
  expect(f.efficiency).toBeLessThanOrEqual(1.05);
}

describe('bench: small workloads through darkroom and the naive client', () => {
  it('W1-shaped, 60 photos: every photo ends, within the limits, and the naive client is measured beside it', async () => {
    const w = withPhotos(workloadByName('W1'), 60);
    const ours = await simulateDarkroom(w, { seed: 3 });
    expect(ours.done + ours.notDone).toBe(60);
    expectWithinLimits(ours);
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
    expectWithinLimits(ours);
  });

  // Several lanes share the unclaimed photos: a lane claims one in the same tick it picks
  // it (Items.claimQueued), so no two lanes can take the same photo.
  it('several keys: each key stays within its own limits', async () => {
    const ours = await simulateDarkroom(withPhotos(workloadByName('W4'), 40), { seed: 3 });
    expect(ours.keys).toBe(5);
    expect(ours.done + ours.notDone).toBe(40);
    expectWithinLimits(ours);
  });
});
