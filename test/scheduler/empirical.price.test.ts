import { describe, expect, it } from 'vitest';
import { fitResiduals, GridDist } from '../../src/scheduler/polling/empirical.js';
import { LatencyModel } from '../../src/scheduler/polling/latency.js';
import { PRICE_FLOOR_MS, priceFromBudget, relativeShare, taskPrice, type WorkLeft } from '../../src/scheduler/polling/price.js';
import { nextPollAt, solvePollTable } from '../../src/scheduler/polling/schedule.js';
import { Rng } from '../../src/sim/random.js';
import { RollingWindow } from '../../src/spec/window.js';

describe('shape-free latency (issue 16)', () => {
  it('the histogram learns a bimodal shape from the intervals tasks ended in', () => {
    const rng = new Rng(7);
    const u = () => rng.uniform();
    const n = 400;
    const lo = new Float64Array(n);
    const hi = new Float64Array(n);
    const w = new Float64Array(n).fill(1);
    for (let i = 0; i < n; i++) {
      const L = u() < 0.3 ? 40 + 20 * u() : 4 + 2 * u();
      // polled every 1 s: the task ended in (⌊L⌋, ⌊L⌋ + 1]; residuals around ln 10
      lo[i] = Math.log(Math.floor(L)) - Math.log(10);
      hi[i] = Math.log(Math.floor(L) + 1) - Math.log(10);
    }
    const d = GridDist.normal(1);
    fitResiduals(d, lo, hi, w, n, GridDist.normal(1), 3);
    // little mass between the humps (7–35 s), about 30% above
    const between = d.cdf(3.5) - d.cdf(0.7);
    expect(between).toBeLessThan(0.05);
    expect(1 - d.cdf(3.5)).toBeGreaterThan(0.25);
    expect(1 - d.cdf(3.5)).toBeLessThan(0.35);
    // the schedule it gives skips the gap: no poll between 8 s and 35 s at a moderate price
    const t = d.table(0.5 / 10);
    const polls: number[] = [];
    for (let at = 0; polls.length < 60 && at < 6.5;) polls.push((at = nextPollAt(t, at)) * 10);
    expect(polls.some((s) => s > 4 && s < 7)).toBe(true); // the fast hump is polled
    const firstAfter8 = polls.find((s) => s > 8)!;
    expect(firstAfter8).toBeGreaterThan(30); // …then nothing until the slow one
  });

  it('on a normal grid, the same recursion gives the lognormal schedule', () => {
    const d = GridDist.normal(0.5);
    const a = d.table(0.1);
    const b = solvePollTable(0.5, 0.1);
    expect(a.polls).toBeCloseTo(b.polls, 1);
    expect(a.lag).toBeCloseTo(b.lag, 1);
  });

  it('before data the model plans on the prior; after, on what it saw', () => {
    const m = new LatencyModel();
    expect(m.predictive('enhance', null).scaleMs).toBeCloseTo(20_000, -2);
    for (let i = 0; i < 60; i++) m.observe('enhance', null, 5_000, 6_000);
    const p = m.predictive('enhance', null);
    expect(p.scaleMs).toBeGreaterThan(4_500);
    expect(p.scaleMs).toBeLessThan(6_500);
    // a hint at half the truth: the regression learns to double it
    for (let i = 0; i < 60; i++) m.observe('restore', 5_000, 9_500, 10_500);
    expect(m.predictive('restore', 5_000).scaleMs).toBeGreaterThan(8_500);
  });
});

describe('one price per poll, from the work left and the calls left', () => {
  const typical = [[{ scaleMs: 12_000, dist: GridDist.normal(0.3) }]];
  const work = (windows: WorkLeft['windows'], n = 30, callsPerMinute = 100): WorkLeft => ({
    uploads: n,
    tasks: n,
    active: 0,
    slots: 3,
    callsPerMinute,
    capabilities: ['enhance'],
    windows,
  });
  const rolling = (limit: number, spanMs: number) => {
    const w = new RollingWindow(limit, spanMs);
    return { headroom: limit, waitFor: (k: number) => w.waitFor(0, k) };
  };

  it('calls plentiful (a short job): the floor — polls cut the lag', () => {
    const p = priceFromBudget(work([rolling(100, 61_000), rolling(1000, 3_601_000)]), typical);
    expect(p.priceMs).toBe(PRICE_FLOOR_MS);
    expect(p.binding).toBe(-1);
  });

  it('calls scarce (20 a minute): far above the floor, and the minute window binds', () => {
    const p = priceFromBudget(work([rolling(20, 61_000), rolling(1000, 3_601_000)], 100, 20), typical);
    expect(p.priceMs).toBeGreaterThan(20 * PRICE_FLOOR_MS);
    expect(p.binding).toBe(0);
  });

  it('an hour window that would overflow prices the polls so the run fits it', () => {
    // 300 photos, 1,000 calls: 100 spare, a third of a poll a task more than one
    const hourFull = { headroom: 1000, waitFor: (k: number) => (k <= 0 ? 0 : 3_000_000) };
    const p = priceFromBudget(work([rolling(100, 61_000), hourFull], 300), typical);
    const t = GridDist.normal(0.3).table(p.priceMs / 12_000);
    expect(300 + 300 * (1 + t.polls)).toBeLessThanOrEqual(1000);
  });

  it('once only the last tasks run, the floor is shared over the slots: their lag is the end of the run', () => {
    const last: WorkLeft = { ...work([rolling(100, 61_000), rolling(1000, 3_601_000)]), uploads: 0, tasks: 0, active: 3 };
    expect(priceFromBudget(last, typical).priceMs).toBeCloseTo(PRICE_FLOOR_MS / 3, 6);
    // one task to create still: the slot it waits for is worth the full floor
    expect(priceFromBudget({ ...last, tasks: 1 }, typical).priceMs).toBe(PRICE_FLOOR_MS);
  });

  it('the relative floor: a long task is not polled for less than 0.5 % of its latency, more on a sparing key', () => {
    const plenty = work([rolling(100, 61_000)]);
    // 400 s task on a spec key: a poll must save 2 s
    expect(taskPrice(PRICE_FLOOR_MS, 400_000, relativeShare(plenty))).toBeCloseTo(2_000, 6);
    // the same task, alone at the end of a run on a 20-a-minute key: 25× as dear, shared over 3 slots
    const sparingLast: WorkLeft = { ...work([rolling(20, 61_000)], 30, 20), uploads: 0, tasks: 0, active: 1 };
    expect(taskPrice(PRICE_FLOOR_MS, 400_000, relativeShare(sparingLast))).toBeCloseTo((2_000 * 25) / 3, 6);
    // and a 10 s task keeps the price of the run
    expect(taskPrice(PRICE_FLOOR_MS, 10_000, relativeShare(plenty))).toBe(PRICE_FLOOR_MS);
  });

  it("a tight key is sparing only while its calls bind: once the calls left fit, the spec key's floor", () => {
    // The last task of a run on a 20-a-minute key, the minute window with room: no sparing.
    const last: WorkLeft = { ...work([rolling(20, 61_000), rolling(1000, 3_601_000)], 30, 20), uploads: 0, tasks: 0, active: 1 };
    expect(priceFromBudget(last, typical)).toEqual({ priceMs: PRICE_FLOOR_MS / 3, binding: -1, share: 3 });
    // The same key with the job ahead of it: the minute binds, and the relative floor is 25× as dear.
    const ahead = priceFromBudget(work([rolling(20, 61_000), rolling(1000, 3_601_000)], 100, 20), typical);
    expect(ahead.binding).toBe(0);
    expect(ahead.share).toBeCloseTo(0.04, 9);
  });

  it('a rolling window says how long until k more calls fit: the oldest must leave first', () => {
    const w = new RollingWindow(3, 60_000);
    w.record(0);
    w.record(10_000);
    w.record(20_000);
    expect(w.waitFor(30_000, 0)).toBe(0);
    expect(w.waitFor(30_000, 1)).toBe(30_000);
    expect(w.waitFor(30_000, 3)).toBe(50_000);
    expect(w.waitFor(30_000, 6)).toBe(50_000 + 60_000);
  });
});
