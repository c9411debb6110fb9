import { describe, expect, it } from 'vitest';
import { spreadTable, type SeedFigures } from '../../bench/spreadTable.js';

const row = (workload: string, seed: number, drFaster: number, missed: string[] = []): SeedFigures => ({
  workload,
  seed,
  wallS: 100 * seed,
  fasterS: (100 * seed) / drFaster,
  drFaster,
  boundDr: 0.9 + seed / 100,
  callsPerPhoto: 3 + seed / 10,
  missed,
});

describe('the spread of issue 16 figures over seeds', () => {
  it('gives each workload its seeds, their mean, and which target missed on which seed', () => {
    const lines = spreadTable([
      row('short-heavy', 1, 0.92, ['wall ≤ 0.90×peer']),
      row('calls-uniform', 1, 0.97),
      row('short-heavy', 2, 0.88),
      row('short-heavy', 3, 0.95, ['wall ≤ 0.90×peer', "bound÷darkroom ≥ 1 s-lag client's"]),
    ]).split('\n');
    expect(lines).toHaveLength(4);
    expect(lines[2]).toBe(
      "| short-heavy | 1,2,3 | 200.0 | 217.3 | 0.92 0.88 0.95 | 0.92 | 0.91 0.92 0.93 | 0.92 | 3.20 | 1 of 3 | wall ≤ 0.90×peer (1,3); bound÷darkroom ≥ 1 s-lag client's (3) |",
    );
    expect(lines[3]).toBe('| calls-uniform | 1 | 100.0 | 103.1 | 0.97 | 0.97 | 0.91 | 0.91 | 3.10 | 1 of 1 | - |');
  });

  it('long workloads have no peer: their ratio to one is a dash, not NaN', () => {
    const line = spreadTable([row('long-percap', 1, Number.NaN)]).split('\n')[2]!;
    expect(line).toContain('| 100.0 | - | - | - |');
    expect(line).not.toContain('NaN');
  });
});
