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
    bound: {
      boundS: 900,
      boundBinds: 'calls',
      lag1sS: 901,
      windowBoundS: 843,
      workCalls: 300,
      otherCalls: 1,
      meanLagS: 16,
      lastMinuteLagS: 3,
      lastHourLagS: 16,
      tasks: 100,
    },
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

describe("the tight key's targets", () => {
  const w = workloadByName('tight-key');
  const tight = (actualS: number, bound: Partial<RunFigures['bound']> = {}, over: Partial<RunFigures> = {}) =>
    run(actualS, {
      workload: 'tight-key',
      photos: 40,
      calls: 121,
      callsPerPhoto: 3.03,
      ...over,
      bound: { ...run(0).bound, boundS: 363, windowBoundS: 303, workCalls: 120, otherCalls: 1, ...bound },
    });

  it('reads the window bound, and says when the calls made need more time than a target leaves', () => {
    // 121 calls at 20 a minute: the 121st no sooner than 6 whole minutes after the first.
    const lines = targets(w, { ours: tight(366), poll2s: tight(360, {}, { client: 'poll2s' }), wait3s: null });
    expect(lines[1]).toBe('MISS wall ≤ 0.92×peer (1.02; target 331 s, under the 360 s 121 calls need)');
    expect(lines[2]).toBe('MISS window bound÷darkroom ≥ 0.90 (0.83; target 337 s, under the 360 s 121 calls need)');
    expect(lines[3]).toBe('ok ≤ 3.15 calls/photo (3.03)');
  });

  it("says nothing of the calls where the run made none beside the work's", () => {
    const lines = targets(w, { ours: tight(315, { otherCalls: 0 }), poll2s: tight(360, {}, { client: 'poll2s' }), wait3s: null });
    expect(lines[1]).toBe('ok wall ≤ 0.92×peer (0.88)');
    expect(lines[2]).toBe('ok window bound÷darkroom ≥ 0.90 (0.96)');
  });
});
