import { describe, expect, it } from 'vitest';
import { crashTest, formatCrashReport } from './harness.js';

/**
 * Issue 4, point 9, reduced for `npm test`: 16 photos, at least 10 SIGKILLs, the hostile
 * profile with its 503 bursts shortened to seconds (the full `npm run test:crash` keeps
 * them at 10–90 s). See harness.ts for the kills and the checks. 12 photos were too few: a
 * kill planned at a phase no photo still had to pass (an upload when all were uploaded) let
 * that run finish the rest, and CI's loaded machine ran out of work after 9 kills.
 */
describe('the crash test, reduced', () => {
  it('survives 10 SIGKILLs over 16 photos under hostile faults: every photo once, byte-identical, no double charge unrecorded', async () => {
    const lines: string[] = [];
    const r = await crashTest({
      photos: 16,
      kills: 10,
      seed: 7,
      latencyMs: 400,
      faults: { base: 'hostile', burst503: { probability: 0.005, minMs: 1000, maxMs: 3000 } },
      limits: { callsPerMinute: 300, callsPerHour: 5000, activeTasks: 3 },
      // Creates whose answers are lost before any task was seen to end hold their slots for
      // the polling cap at most (src/scheduler/taskBound.ts): 30 s, within a run's 60 s.
      pollCapMinutes: 0.5,
      runTimeoutMs: 60_000,
      log: (l) => lines.push(l),
    });
    const text = formatCrashReport(r);
    process.stdout.write(`${text}\n`);
    expect(r.kills).toBeGreaterThanOrEqual(10);
    expect(r.mismatches, text).toEqual([]);
    expect(r.problems, text).toEqual([]);
    expect(r.tempFilesLeft).toBe(0);
    expect(r.integrity).toBe('ok');
    expect(Object.keys(r.killsByPhase).length).toBeGreaterThanOrEqual(4);
    // Issue 12: the key's limits held across every kill, as the simulator counts them.
    expect(r.windows.violations, text).toBe(0);
  }, 200_000);
});

/**
 * Issue 12, point 3: kill -9 with slow answers under a 30/min limit never exceeds the
 * window as the simulator counts it. A quarter of the answers come 5 s late, past the
 * client's 3 s timeout, so calls are often in flight when a kill lands: each was written
 * to the key's store before it was sent, and the next run counts it. At least 20 kills,
 * over 20 photos (a few minutes: 30 calls a minute bind; fewer photos ran out of work
 * before the 20th kill on a loaded machine).
 */
describe('the crash test under slow answers and a 30/min limit', () => {
  it('never exceeds the window, the hour or the slots across 20 SIGKILLs', async () => {
    const r = await crashTest({
      photos: 20,
      kills: 20,
      seed: 11,
      latencyMs: 400,
      faults: { slowAnswer: { probability: 0.25, delayMs: 5_000 } },
      limits: { callsPerMinute: 30, callsPerHour: 1000, activeTasks: 3 },
      // Creates killed in flight before any task was seen to end hold their slots for the
      // polling cap at most: 30 s here, not 10 min, so the loop keeps moving.
      pollCapMinutes: 0.5,
      timeoutMs: 3000,
      runTimeoutMs: 90_000,
    });
    const text = formatCrashReport(r);
    process.stdout.write(`${text}\n`);
    expect(r.kills).toBeGreaterThanOrEqual(20);
    expect(r.windows.calls).toBeGreaterThan(30); // the minute window had to bind
    expect(r.windows.violations, text).toBe(0);
    expect(r.windows.maxCallsInAnyMinute).toBeLessThanOrEqual(30);
    expect(r.mismatches, text).toEqual([]);
    expect(r.problems, text).toEqual([]);
    expect(r.integrity).toBe('ok');
  }, 420_000);
});
