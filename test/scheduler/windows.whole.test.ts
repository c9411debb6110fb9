import { afterEach, describe, expect, it } from 'vitest';
import { CallBudget } from '../../src/scheduler/budget/callBudget.js';
import { simulate } from '../helpers/simulate.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

describe('the places kept for creates', () => {
  it("are kept while a create may come soon, the minute's given to a poll while every slot is held, all once nothing is left to create", () => {
    // 19 of 20 calls in the minute (no arrival margin here): one place left, the one kept for creates.
    const b = new CallBudget(
      { callsPerMinute: 20, callsPerHour: 1000 },
      Array.from({ length: 19 }, (_, i) => i),
      0,
    );
    expect(b.availableAt(100, true)).toBe(100);
    expect(b.availableAt(100)).toBe(60_000);
    b.setCreatesAhead('later');
    expect(b.availableAt(100)).toBe(100);
    b.setCreatesAhead('soon');
    expect(b.availableAt(100)).toBe(60_000);
    // The hour's kept places stay kept while creates are to come, and are the last polls' once none are.
    const h = new CallBudget(
      { callsPerMinute: 100, callsPerHour: 30 },
      Array.from({ length: 27 }, (_, i) => i * 1000),
      0,
    );
    h.setCreatesAhead('later');
    expect(h.availableAt(100_000)).toBe(3_600_000);
    h.setCreatesAhead('none');
    expect(h.availableAt(100_000)).toBe(100_000);
  });
});

describe("a tight key's windows, used whole", () => {
  it('40 photos of 2–5 s tasks at 20 calls a minute: every window before the last full, the work done as the seventh opens', async () => {
    const r = await simulate({
      photos: 40,
      steps: [{ capability: 'enhance' }],
      extra: { limits: { callsPerMinute: 20 } },
      sim: { latency: { kind: 'uniform', minMs: 2_000, maxMs: 5_000 }, waitTimeHint: { noiseSigma: 0.3 } },
    });
    cleanups.push(r.job.cleanup);
    expect(r.result.status).toMatchObject({ total: 40, done: 40 });
    const k = Object.values(r.audit.keys)[0]!;
    expect(k.maxCallsInAnyMinute).toBeLessThanOrEqual(20);
    expect(k.rejected429).toBe(0);
    // The usage read and the work's 120 calls: the 121st cannot leave before six windows
    // (of 61 s, with the arrival margin) have passed, and nothing more is left for after it.
    expect(k.calls).toBeGreaterThanOrEqual(121);
    expect(r.endMs - r.startMs).toBeLessThanOrEqual(6 * 61_000 + 100);
  });
});
