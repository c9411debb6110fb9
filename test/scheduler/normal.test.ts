import { describe, expect, it } from 'vitest';
import { erf, normalCdf } from '../../src/scheduler/polling/normal.js';

describe('erf (was simple-statistics errorFunction, issue 13)', () => {
  it('gives bit for bit what errorFunction 7.8 gave, so seeded simulations replay as before', () => {
    // simple-statistics' errorFunction at these points, printed before the package was dropped.
    const was: [number, number][] = [
      [-3.1, -0.999988351342027],
      [-1, -0.8427007877600068],
      [-0.25, -0.2763263864951251],
      [0, -3.0000000483809686e-8],
      [0.5, 0.5204999077232426],
      [1.3, 0.9340079496712611],
      [2.7, 0.9998656672483162],
    ];
    for (const [x, y] of was) expect(erf(x)).toBe(y);
  });
  it('is the normal CDF within 1e-6', () => {
    expect(normalCdf(0)).toBeCloseTo(0.5, 6);
    expect(normalCdf(1.959964)).toBeCloseTo(0.975, 6);
    expect(normalCdf(-1)).toBeCloseTo(0.158655, 6);
  });
});
