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
  it("survives 10 SIGKILLs over 16 photos under hostile faults: every photo once, the clean run's pixels and metadata, no double charge unrecorded", async () => {
    const lines: string[] = [];
    const r = await crashTest({
      photos: 16,
      kills: 10,
      seed: 7,
      latencyMs: 400,
      faults: { base: 'hostile', burst503: { probability: 0.005, minMs: 1000, maxMs: 3000 } },
      limits: { callsPerMinute: 300, callsPerHour: 5000, activeTasks: 3 },
      // Creates whose answers are lost before any task was seen to end hold their slots for
      // the polling cap at most (src/scheduler/budget/keySlots.ts, taskBoundMs): 30 s, within a run's 60 s.
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
    expect(r.orphans).toBe(0);
    expect(r.integrity).toBe('ok');
    expect(Object.keys(r.killsByPhase).length).toBeGreaterThanOrEqual(4);
    // Issue 12: the key's limits held across every kill, as the simulator counts them.
    expect(r.windows.violations, text).toBe(0);
  }, 200_000);
});
