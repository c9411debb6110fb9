import { describe, expect, it } from 'vitest';
import { nextPollAt, pollsUntil, PollTables, solvePollTable, type PollTable } from '../../src/scheduler/polling/schedule.js';
import { Rng } from '../../src/sim/random.js';

/** Deterministic standard normals. */
function normals(n: number, seed = 7): number[] {
  const rng = new Rng(seed);
  return Array.from({ length: n }, () => rng.normal());
}

/** Polls and lag (units of the median) of following the table, for latencies drawn at σ. */
function follow(t: PollTable, sigma: number, draws: readonly number[]): { polls: number; lag: number } {
  let polls = 0;
  let lag = 0;
  for (const z of draws) {
    const L = Math.exp(sigma * z);
    const seen = pollsUntil(t, L);
    polls += seen.polls;
    lag += seen.seenAt - L;
  }
  return { polls: polls / draws.length, lag: lag / draws.length };
}

describe('optimal poll schedule', () => {
  const draws = normals(40_000);

  it('spends the polls and leaves the lag it says it will', () => {
    for (const [sigma, price] of [
      [0.5, 0.05],
      [0.26, 0.4],
      [0.8, 0.02],
    ] as const) {
      const t = solvePollTable(sigma, price);
      const seen = follow(t, sigma, draws);
      expect(seen.polls).toBeCloseTo(t.polls, 1);
      expect(Math.abs(seen.lag - t.lag) / t.lag).toBeLessThan(0.05);
    }
  });

  it('trades polls for lag as the price moves', () => {
    const cheap = solvePollTable(0.5, 0.01);
    const dear = solvePollTable(0.5, 1);
    expect(cheap.polls).toBeGreaterThan(dear.polls + 3);
    expect(cheap.lag).toBeLessThan(dear.lag / 5);
  });

  it('costs less than any geometric schedule (first poll a, then ×r)', () => {
    // The DP's cost E[lag] + λ·E[polls] is the least: check it against a family of
    // geometric schedules (first poll a, then ×r) that a hand-written poller might use.
    const sigma = 0.5;
    const price = 0.05;
    const best = solvePollTable(sigma, price);
    const bestCost = best.lag + price * best.polls;
    for (const a of [0.5, 0.7, 0.9, 1.1]) {
      for (const r of [1.1, 1.25, 1.5]) {
        let polls = 0;
        let lag = 0;
        for (const z of draws) {
          const L = Math.exp(sigma * z);
          let at = a;
          polls++;
          while (at < L) {
            at *= r;
            polls++;
          }
          lag += at - L;
        }
        const cost = (lag + price * polls) / draws.length;
        expect(cost).toBeGreaterThan(bestCost * 0.99);
      }
    }
  });

  it('finds the lowest price that spends at most a given number of polls', () => {
    const tables = new PollTables();
    for (const polls of [1.2, 1.5, 3]) {
      const price = tables.priceFor(0.3, polls);
      expect(tables.get(0.3, price).polls).toBeLessThanOrEqual(polls + 0.01);
      expect(tables.get(0.3, price * 0.8).polls).toBeGreaterThan(polls);
    }
  });

  it('answers NaN past the end of its grid, where the model has no weight left', () => {
    const t = solvePollTable(0.3, 0.1);
    expect(nextPollAt(t, 1e6)).toBeNaN();
    expect(nextPollAt(t, 1)).toBeGreaterThan(1);
  });
});
