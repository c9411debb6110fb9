import { describe, expect, it } from 'vitest';
import type { RunFigures } from '../../bench/figures.js';
import { targets } from '../../bench/table16.js';
import { workloadByName } from '../../bench/workloads.js';

/** A run's figures: only what the targets read matters here. */
function run(actualS: number, over: Partial<RunFigures> = {}): RunFigures {
  return {
    workload: 'calls-uniform',
    client: 'darkroom',
    photos: 100,
    keys: 1,
    tStarH: 0.25,
    binds: 'minute',
    actualH: actualS / 3600,
    efficiency: 900 / actualS,
    done: 100,
    notDone: 0,
    calls: 304,
    callsPerPhoto: 3.04,
    maxCallsPerMinute: 20,
    maxCallsPerHour: 304,
    maxActive: 3,
    rejected429: 0,
    wallS: 0.4,
    peakRssMb: 150,
    actualS,
    bound: { boundS: 900, boundBinds: 'calls', lag1sS: 901, meanLagS: 16, tasks: 100 },
    ...over,
  };
}

describe('issue 16 targets as the bench checks them', () => {
  const w = workloadByName('calls-uniform');

  it('says when a call-bound wall target asks for less than the bound', () => {
    // The faster peer at 983 s: 0.90 × 983 = 885 s, under the bound's 900 s.
    const lines = targets(w, { ours: run(955), poll2s: run(1875, { client: 'poll2s' }), wait3s: run(983, { client: 'wait3s' }) });
    expect(lines[1]).toBe('MISS wall ≤ 0.90×peer (0.97; target 885 s, under the bound)');
    expect(lines).toContain('ok bound÷darkroom ≥ 0.90 (0.94)');
    expect(lines).toContain('ok ≤ 3.15 calls/photo (3.04)');
  });

  it('says nothing of the bound where the target is above it', () => {
    const lines = targets(w, { ours: run(955), poll2s: null, wait3s: run(1100, { client: 'wait3s' }) });
    expect(lines[1]).toBe('ok wall ≤ 0.90×peer (0.87)');
  });

  it('a window exceeded or a 429 is a miss of its own', () => {
    expect(targets(w, { ours: run(955, { maxCallsPerMinute: 21 }), poll2s: null, wait3s: null })[0]).toBe('MISS 0 violations, 0 429s');
    expect(targets(w, { ours: run(955, { rejected429: 1 }), poll2s: null, wait3s: null })[0]).toBe('MISS 0 violations, 0 429s');
  });
});
