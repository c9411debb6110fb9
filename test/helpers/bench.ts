import { expect } from 'vitest';
import type { RunFigures } from '../../bench/figures.js';

/**
 * A benchmark run within the service's limits, from the simulator's audit (what the service
 * saw, not what the client counted): no minute or hour window over its 100 or 1,000 calls,
 * never more than 3 tasks at once.
 */
export function expectWithinLimits(f: RunFigures): void {
  expect(f.maxCallsPerMinute).toBeLessThanOrEqual(100);
  expect(f.maxCallsPerHour).toBeLessThanOrEqual(1000);
  expect(f.maxActive).toBeLessThanOrEqual(3);
}
