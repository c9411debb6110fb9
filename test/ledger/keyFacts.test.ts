import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { installClock, VirtualClock } from '../../src/clock.js';
import { Ledger, type ItemRow } from '../../src/ledger/index.js';
import { discovered } from '../helpers/discovered.js';

/**
 * Issue 12: what a run tells its key's store from its ledger at start — the task slots
 * its photos may hold (running tasks, held creates, orphan tasks) — and its own id there.
 */

const T0 = Date.UTC(2026, 10, 22, 20);
const FP = 'k_aaaaaaaaaaaa';
const BOUND = 120_000;
const TIMEOUT = 30_000;

let clock: VirtualClock;
let restore: () => void;
let ledger: Ledger;
beforeEach(() => {
  clock = new VirtualClock(T0);
  restore = installClock(clock);
  ledger = Ledger.open(':memory:');
  discovered(
    ledger,
    Array.from({ length: 5 }, (_, i) => `p${i}.jpg`),
  );
});
afterEach(() => {
  ledger.close();
  restore();
});

function uploaded(id: number): ItemRow {
  ledger.items.move(id, 'queued', 'uploading', { key_fp: FP });
  return ledger.items.move(id, 'uploading', 'uploaded', { input_url: `http://x/u${id}.jpg` });
}

function accepted(id: number, taskId: string): ItemRow {
  const item = uploaded(id);
  const sub = ledger.submissions.begin(item, 'enhance', FP, `dr-${id}`);
  return ledger.submissions.accept(sub, ledger.items.get(id)!, {
    taskId,
    businessType: 'ENHANCE',
    responseRequestId: null,
    waitHintMs: null,
    pollAtMs: 0,
  });
}

describe('the slots a ledger holds on a key', () => {
  it('running tasks, held creates (from when the client gave up), and orphan tasks; nothing past its time', () => {
    accepted(1, 'task-running');
    // A create whose answer was lost 2 s after it was sent.
    const lost = uploaded(2);
    const sub = ledger.submissions.begin(lost, 'enhance', FP, 'dr-lost');
    clock.advanceBy(2_000);
    ledger.submissions.ambiguous(
      sub,
      ledger.items.get(2)!,
      { httpStatus: null, code: null, responseRequestId: null, error: 'reset' },
      'unknown',
    );
    // A task left running when its photo moved on without it (an orphan).
    const orphan = accepted(3, 'task-orphan');
    ledger.items.move(orphan.id, 'active', 'failed', { reason: 'moved on' });
    // A task seen to end: holds nothing.
    accepted(4, 'task-ended');
    ledger.tasks.succeeded(ledger.items.get(4)!, 'http://r/4.jpg', true);
    clock.advanceBy(10_000);

    const slots = ledger.keyFacts.slotsOf(FP, clock.now(), BOUND, TIMEOUT);
    expect(slots).toEqual([
      { itemId: 1, ref: 'task-running', kind: 'active', sinceMs: T0, expiresMs: T0 + BOUND },
      { itemId: 2, ref: 'dr-lost', kind: 'held', sinceMs: T0 + 2_000, expiresMs: T0 + 2_000 + BOUND },
      { itemId: 3, ref: 'task-orphan', kind: 'held', sinceMs: T0 + 2_000, expiresMs: T0 + 2_000 + BOUND },
    ]);
    expect(ledger.keyFacts.slotsOf('k_bbbbbbbbbbbb', clock.now(), BOUND, TIMEOUT)).toEqual([]);
    // Once such a task could have ended, held and orphan slots are left out; a running one is tracked.
    expect(ledger.keyFacts.slotsOf(FP, T0 + 2_000 + BOUND, BOUND, TIMEOUT).map((s) => s.ref)).toEqual(['task-running']);
  });

  it('a create still `sending` when its run died counts from its send plus the call timeout, at most', () => {
    const item = uploaded(1);
    ledger.submissions.begin(item, 'enhance', FP, 'dr-killed');
    clock.advanceBy(60_000);
    const report = ledger.recover(); // the next run: resolved now, long after it could have been accepted
    expect(report.ambiguous).toBe(1);
    expect(ledger.keyFacts.slotsOf(FP, clock.now(), BOUND, TIMEOUT)).toEqual([
      { itemId: 1, ref: 'dr-killed', kind: 'held', sinceMs: T0 + TIMEOUT, expiresMs: T0 + TIMEOUT + BOUND },
    ]);
  });

  it('the longest recent task latency: null before any task ended on its own', () => {
    expect(ledger.keyFacts.longestRecentLatencyMs()).toBeNull();
    accepted(1, 't1');
    clock.advanceBy(7_000);
    ledger.tasks.succeeded(ledger.items.get(1)!, 'http://r/1.jpg', true);
    accepted(2, 't2');
    clock.advanceBy(3_000);
    ledger.tasks.failed(ledger.items.get(2)!, 'ERROR', 'error');
    expect(ledger.keyFacts.longestRecentLatencyMs()).toBe(7_000);
  });

  it("the ledger's own id in the key stores is made once and kept", () => {
    const id = ledger.keyFacts.ownerId();
    expect(id).toMatch(/^l_[0-9a-f-]{36}$/);
    expect(ledger.keyFacts.ownerId()).toBe(id);
  });
});
