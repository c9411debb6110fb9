import { describe, expect, it } from 'vitest';
import { CallBudget } from '../../src/scheduler/budget/callBudget.js';
import { LatencyModel } from '../../src/scheduler/polling/latency.js';
import { PollPlanner } from '../../src/scheduler/polling/polling.js';
import { PollTables } from '../../src/scheduler/polling/schedule.js';

describe('CallBudget', () => {
  it('inherits calls already made (from the ledger) and obeys server pauses', () => {
    const past = Array.from({ length: 100 }, (_, i) => i * 10); // 100 calls in the first second
    const b = new CallBudget({ callsPerMinute: 100, callsPerHour: 1000 }, past, 0);
    // a create may take the last places of the window; other calls leave 3 for creates
    expect(b.availableAt(1000, true)).toBe(60_000);
    expect(b.availableAt(1000)).toBe(60_030);
    b.pauseUntil(90_000);
    expect(b.availableAt(70_000)).toBe(90_000);
  });

  it('paces at the hour rate only when asked, and counts the time calls went unused', () => {
    const b = new CallBudget({ callsPerMinute: 100, callsPerHour: 3600 }, [], 0);
    b.setPacing(true, 0);
    let t = 0;
    for (let i = 0; i < 36; i++) {
      t = b.availableAt(t);
      b.take(t);
    }
    // capacity 36 tokens, then one a second
    expect(t).toBe(0);
    expect(b.availableAt(0)).toBeGreaterThan(900);
    b.setPacing(false, 0);
    expect(b.availableAt(0)).toBe(0);
    b.setPacing(true, 0);
    expect(b.unusedMs(100_000)).toBeGreaterThan(0);
  });
});

describe('CallBudget.bucketFullAt (issue 16)', () => {
  it('says when the paced bucket is full again, from which time a call not made is lost to the hour', () => {
    const b = new CallBudget({ callsPerMinute: 100, callsPerHour: 3600 }, [], 0);
    expect(b.bucketFullAt(0)).toBeNaN();
    b.setPacing(true, 0);
    expect(b.bucketFullAt(0)).toBe(0);
    for (let i = 0; i < 3; i++) b.take(0);
    // 36 tokens a second's worth each: three spent are full again three seconds later (and the 1 s margin of the window)
    const full = b.bucketFullAt(0);
    expect(full).toBeGreaterThan(2_900);
    expect(full).toBeLessThan(3_100);
    expect(b.bucketFullAt(full)).toBe(full);
    b.setPacing(false, full);
    expect(b.bucketFullAt(full)).toBeNaN();
  });
});

describe('PollPlanner', () => {
  it("gives the chance a task seen running has ended since, from the capability's learned latency", () => {
    const m = new LatencyModel();
    // restore ends between 9 and 11 s
    for (let i = 0; i < 200; i++) m.observe('restore', null, 9_000, 11_000);
    const p = new PollPlanner(m);
    expect(p.endedChance('restore', null, 5_000, 5_000)).toBe(0);
    expect(p.endedChance('restore', null, 5_000, 6_000)).toBeLessThan(0.05);
    expect(p.endedChance('restore', null, 5_000, 14_000)).toBeGreaterThan(0.95);
    // seen running at 10 s, half its course is behind it: 12 s is likelier ended than 10.5 s
    expect(p.endedChance('restore', null, 10_000, 12_000)).toBeGreaterThan(p.endedChance('restore', null, 10_000, 10_500));
  });

  it('polls later as the price of a poll rises, and never before the minimum interval', () => {
    const p = new PollPlanner(new LatencyModel());
    const early = p.firstDelay('enhance', 20_000);
    const before = p.priceMs;
    for (let i = 0; i < 200; i++) p.adjust(60_000, 0, 20_000);
    const late = p.firstDelay('enhance', 20_000);
    expect(p.priceMs).toBeGreaterThan(before * 10);
    expect(late).toBeGreaterThan(early);
    expect(p.nextDelay('enhance', 20_000, 1_000_000)).toBeGreaterThanOrEqual(500);
  });

  it('polls sooner as the price falls while slots bind', () => {
    const p = new PollPlanner(new LatencyModel());
    const first = p.firstDelay('enhance', 20_000);
    for (let i = 0; i < 200; i++) p.adjust(0, 60_000, 20_000);
    expect(p.firstDelay('enhance', 20_000)).toBeLessThan(first);
  });

  it('does not let the price fall below what the calls left can pay for', () => {
    const latency = new LatencyModel();
    const p = new PollPlanner(latency);
    p.firstDelay('enhance', 20_000); // the lane has seen hinted enhance tasks
    p.setSpare(0.25);
    for (let i = 0; i < 200; i++) p.adjust(0, 60_000, 20_000);
    const floor = p.priceMs;
    p.setSpare(5);
    for (let i = 0; i < 200; i++) p.adjust(0, 60_000, 20_000);
    expect(p.priceMs).toBeLessThan(floor / 2);
    // at the floor, the schedule for a typical task expects at most 1.25 polls
    const typical = latency.predict('enhance', 20_000);
    const tables = new PollTables();
    expect(tables.get(typical.sigma, floor / Math.exp(typical.mu)).polls).toBeLessThanOrEqual(1.25 + 0.02);
    expect(tables.get(typical.sigma, (0.7 * floor) / Math.exp(typical.mu)).polls).toBeGreaterThan(1.25);
  });
});
