import { describe, expect, it } from 'vitest';
import { listSchedule, wholeSpans } from '../../bench/bound.js';
import { MINUTE_MS } from '../../src/spec/window.js';

/** A task of the sim's log: only what the bound reads matters here. */
const task = (i: number, latencyMs: number) => ({
  keyFingerprint: 'k',
  sourceId: `p${i}`,
  capability: 'enhance' as const,
  creation: i,
  latencyMs,
  seenEndedAt: null,
});

describe('the clairvoyant bound (issue 16)', () => {
  const perMinute = (n: number) => (c: number) => (c / n) * MINUTE_MS;

  it('a create waits for its upload, the creates before it and the polls that freed its slot', () => {
    // 10 one-step photos of 1 ms at 20 calls a minute: task 9 needs 10 uploads, 10 creates
    // and 7 polls (tasks 0–6 seen ended, so that one of 3 slots is free) before it: 27 calls.
    const tasks = Array.from({ length: 10 }, (_, i) => task(i, 1));
    expect(listSchedule(tasks, 0, 0, perMinute(20))).toBe((27 / 20) * MINUTE_MS + 1);
  });

  it('the first three tasks need no poll before them', () => {
    const tasks = Array.from({ length: 3 }, (_, i) => task(i, 1));
    expect(listSchedule(tasks, 0, 0, perMinute(20))).toBe((6 / 20) * MINUTE_MS + 1);
  });

  it('where calls are free, the slots alone: the 1 s-lag client adds a second a task in line', () => {
    const tasks = Array.from({ length: 6 }, (_, i) => task(i, 10_000));
    expect(listSchedule(tasks, 0, 0, () => 0)).toBe(20_000);
    expect(listSchedule(tasks, 0, 1_000, () => 0)).toBe(22_000);
  });

  it('with the windows read whole, a call starts no sooner than its window: 20 at once, the 21st a minute on', () => {
    expect([1, 20, 21, 40, 41, 120, 121].map((c) => wholeSpans(c, 20))).toEqual([0, 0, 1, 1, 2, 5, 6]);
    const whole = (c: number) => wholeSpans(c, 20) * MINUTE_MS;
    // The same 10 photos: task 9's create is the 27th call, in the second window.
    const tasks = Array.from({ length: 10 }, (_, i) => task(i, 1));
    expect(listSchedule(tasks, 0, 0, whole)).toBe(MINUTE_MS + 1);
    // Three tasks need 6 calls: all in the first window.
    expect(listSchedule(tasks.slice(0, 3), 0, 0, whole)).toBe(1);
  });
});
