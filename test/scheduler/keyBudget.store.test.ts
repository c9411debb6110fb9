import { statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { CallRecord } from '../../src/api/index.js';
import { KeyStore } from '../../src/keystore/store.js';
import { KeyBudget } from '../../src/scheduler/budget/keyBudget.js';
import type { KeyBudgetOptions } from '../../src/scheduler/budget/keyCache.js';
import { callAnswer, keyStores } from '../helpers/keyStores.js';

/**
 * Issue 12, points 3 and 4: the per-key store every darkroom process on the machine
 * shares. Each KeyBudget here stands for one process: two of them on one file are two
 * connections, as two processes would have.
 */

const T0 = Date.UTC(2026, 10, 22, 20);
const FP = 'k_0123456789ab';
const BOUND = 5 * 60_000;
/** The client's call timeout: a create in flight may be accepted until then. */
const TIMEOUT = 1000;
const LIMITS = { callsPerMinute: 10, callsPerHour: 100, activeTasks: 3 };

// Times are given explicitly; what the budget reads from the clock itself (an answer's time) is T0.
const { stateDir, open, clock } = keyStores(T0, FP);
const answer = (sentRequestId: string, httpStatus = 200, extra: Partial<CallRecord> = {}) =>
  callAnswer(T0, sentRequestId, httpStatus, extra);

/** One process's budget: its owner id, and which other processes it believes alive. */
function budget(store: KeyStore, owner: string, o: Partial<KeyBudgetOptions> & { alive?: Set<number> } = {}, now = T0): KeyBudget {
  const alive = o.alive ?? new Set<number>();
  return new KeyBudget(
    store,
    {
      owner,
      limits: LIMITS,
      taskBoundMs: () => BOUND,
      callTimeoutMs: TIMEOUT,
      marginMs: 0,
      createReserve: 0,
      liveness: (pid) => alive.has(pid),
      ...o,
    },
    now,
  );
}

describe('the key store file', () => {
  it("is named by the key's fingerprint, 0600, in a folder darkroom makes 0700", () => {
    const dir = stateDir();
    open(dir);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(statSync(path.join(dir, `${FP}.db`)).mode & 0o777).toBe(0o600);
    expect(() => KeyStore.fileFor(dir, 'sk-live-not-a-fingerprint')).toThrow(/not a key fingerprint/);
  });
});

describe('reservations across two connections to one store (two processes)', () => {
  it('one window: what one process reserved, the other counts, and a reservation made on a stale view is refused', () => {
    const dir = stateDir();
    const a = budget(open(dir), 'run-a');
    const b = budget(open(dir), 'run-b');
    // A looks: room now.
    expect(a.windowsAt(T0).availableAt(T0)).toBe(T0);
    // B takes the whole minute window meanwhile.
    for (let i = 0; i < 10; i++) expect(b.reserve(T0 + i, 'poll'), `b ${i}`).toBeDefined();
    expect(b.reserve(T0 + 10, 'poll')).toBeUndefined();
    // A's reservation re-reads the store inside its transaction: refused, and A now knows when.
    expect(a.reserve(T0 + 20, 'poll')).toBeUndefined();
    expect(a.windowsAt(T0 + 20).availableAt(T0 + 20)).toBe(T0 + 60_000);
    expect(a.windowsAt(T0 + 20).usage(T0 + 20).minute).toBe(10);
    expect(a.reserve(T0 + 60_000, 'poll')).toBeDefined();
    expect(b.reserve(T0 + 60_001, 'poll')).toBeDefined();
    expect(b.reserve(T0 + 60_001, 'poll')).toBeUndefined(); // A's call counts in B's window
  });

  it("one slot count: creates of two processes share the key's three slots", () => {
    const dir = stateDir();
    const a = budget(open(dir), 'run-a');
    const b = budget(open(dir), 'run-b');
    const ta = [a.reserve(T0, 'create', { itemId: 1 }), a.reserve(T0 + 1, 'create', { itemId: 2 })];
    expect(ta.every(Boolean)).toBe(true);
    expect(b.reserve(T0 + 2, 'create', { itemId: 1 })).toBeDefined();
    expect(b.reserve(T0 + 3, 'create', { itemId: 2 })).toBeUndefined();
    expect(a.slots.inUse(T0 + 1000)).toBe(3);
    // One of A's tasks ends: B may create.
    a.sending(ta[0]!, T0, 'r1');
    a.slots.createResolved(ta[0]!.slotId, { kind: 'accepted', taskId: 't1' }, T0 + 10);
    a.slots.taskEnded('t1');
    expect(b.reserve(T0 + 2000, 'create', { itemId: 2 })).toBeDefined();
  });
});

describe('a call without an answer', () => {
  it('counts as spent: a process that starts after one was killed mid-call counts it', () => {
    const dir = stateDir();
    const killed = budget(open(dir), 'run-a');
    const t = killed.reserve(T0, 'create', { itemId: 7 })!;
    killed.sending(t, T0 + 5, 'dr-in-flight'); // …and SIGKILL: no answer, no settle
    const next = budget(open(dir), 'run-b', {}, T0 + 1000);
    expect(next.windowsAt(T0 + 1000).usage(T0 + 1000)).toEqual({ minute: 1, hour: 1 });
    // Its create's slot counts too, until the task could have ended (its owner is gone):
    // accepted at the latest when the client would have given up, then run for BOUND.
    expect(next.slots.inUse(T0 + 1000)).toBe(1);
    expect(next.slots.inUse(T0 + TIMEOUT + BOUND - 1)).toBe(1);
    expect(next.slots.inUse(T0 + TIMEOUT + BOUND)).toBe(0);
    expect(next.windowsAt(T0 + 60_001).usage(T0 + 60_001)).toEqual({ minute: 0, hour: 1 });
  });

  it('a reservation whose call never left is given back; one that left late counts from when it left', () => {
    const dir = stateDir();
    const p = budget(open(dir), 'run-a');
    const skipped = p.reserve(T0, 'upload')!;
    p.settle(skipped); // the stage found the file unreadable: nothing was sent
    expect(p.windowsAt(T0).usage(T0)).toEqual({ minute: 0, hour: 0 });
    const slow = p.reserve(T0, 'upload')!;
    p.sending(slow, T0 + 5_000, 'dr-upload'); // read and converted for 5 s
    p.answered(slow, answer('dr-upload'));
    p.settle(slow);
    const other = budget(open(dir), 'run-b');
    expect(other.windowsAt(T0 + 64_000).usage(T0 + 64_000).minute).toBe(1); // it left at T0+5 s: still in the minute at T0+64 s
    expect(other.windowsAt(T0 + 65_001).usage(T0 + 65_001).minute).toBe(0);
  });

  it('one answered late counts from its answer less the margin: the service may have counted it that late', () => {
    const dir = stateDir();
    const p = budget(open(dir), 'run-a', { marginMs: 1000 });
    const late = p.reserve(T0, 'poll')!;
    p.sending(late, T0, 'dr-late');
    clock().advanceTo(T0 + 8_000); // a loaded machine: the answer is read 8 s after the call left
    p.answered(late, answer('dr-late'));
    p.settle(late);
    const lost = p.reserve(T0 + 8_000, 'poll')!;
    p.sending(lost, T0 + 8_000, 'dr-lost');
    clock().advanceTo(T0 + 20_000); // no answer at all (a timeout): it may have arrived until now
    p.answered(lost, answer('dr-lost', 200, { httpStatus: null, businessCode: null }));
    p.settle(lost);
    // Windows of 61 s (the margin): from T0+7 s and from T0+20 s, in this process and any other.
    const other = budget(open(dir), 'run-b', { marginMs: 1000 });
    for (const b of [p, other]) {
      expect(b.windowsAt(T0 + 67_999).usage(T0 + 67_999).minute).toBe(2);
      expect(b.windowsAt(T0 + 68_001).usage(T0 + 68_001).minute).toBe(1);
      expect(b.windowsAt(T0 + 80_999).usage(T0 + 80_999).minute).toBe(1);
      expect(b.windowsAt(T0 + 81_001).usage(T0 + 81_001).minute).toBe(0);
    }
  });
});

describe('held creates (outcome unknown)', () => {
  it('hold a slot until the task could have ended, then free it', () => {
    const p = budget(open(stateDir()), 'run-a');
    const t = p.reserve(T0, 'create', { itemId: 1 })!;
    p.sending(t, T0, 'dr-lost');
    // The answer was lost at once (a dropped connection): the task, if any, started by then.
    p.slots.createResolved(t.slotId, { kind: 'held', ref: 'dr-lost', sentMs: T0, resolvedMs: T0 + 200 }, T0 + 200);
    expect(p.slots.inUse(T0 + 200 + BOUND - 1)).toBe(1);
    // The lane is woken when it expires (and looks again every 5 s meanwhile: the bound may shrink).
    expect(p.slots.nextChangeAt(T0 + 300)).toBe(T0 + 300 + 5000);
    expect(p.slots.nextChangeAt(T0 + BOUND - 1000)).toBe(T0 + 200 + BOUND);
    expect(p.slots.inUse(T0 + 200 + BOUND)).toBe(0);
  });

  it('follow the bound as tasks are seen to end: a first guess shrinks to what tasks take', () => {
    let bound = 10 * 60_000; // nothing observed yet
    const p = budget(open(stateDir()), 'run-a', { taskBoundMs: () => bound });
    const t = p.reserve(T0, 'create', { itemId: 1 })!;
    p.sending(t, T0, 'dr-lost');
    // Timed out: it may have been accepted up to the client's timeout.
    p.slots.createResolved(t.slotId, { kind: 'held', ref: 'dr-lost', sentMs: T0, resolvedMs: T0 + 5_000 }, T0 + 5_000);
    expect(p.slots.inUse(T0 + 60_000)).toBe(1);
    bound = 20_000; // tasks are seen to take at most ~5 s
    expect(p.slots.inUse(T0 + 60_000)).toBe(0);
    expect(p.store.slots()[0]).toMatchObject({ kind: 'held', since_ms: T0 + TIMEOUT, expires_ms: T0 + TIMEOUT + 20_000 });
  });

  it('are released, oldest first, by a create accepted while the rows count more than the limit', () => {
    const dir = stateDir();
    // Two live processes (each registered by its run's reconciliation).
    const alive = new Set([21, 22]);
    const a = budget(open(dir), 'run-a', { alive });
    a.reconcile({ slots: [], calls: [], pausedUntil: 0 }, T0, { pid: 21, host: 'h' });
    const held = [0, 1].map((i) => {
      const t = a.reserve(T0 + i, 'create', { itemId: 10 + i })!;
      a.sending(t, T0 + i, `dr-held-${i}`);
      a.slots.createResolved(t.slotId, { kind: 'held', ref: `dr-held-${i}`, sentMs: T0 + i, resolvedMs: T0 + i }, T0 + i);
      return t;
    });
    expect(held).toHaveLength(2);
    // Two more creates go out at once (the key's three slots: two held, one free — but a
    // second process took its chance too): both are accepted. The service had room for
    // both, so at most one of the held creates can be running: the oldest is released.
    const b = budget(open(dir), 'run-b', { alive });
    b.reconcile({ slots: [], calls: [], pausedUntil: 0 }, T0, { pid: 22, host: 'h' });
    const x = a.reserve(T0 + 10, 'create', { itemId: 20 })!;
    expect(b.reserve(T0 + 11, 'create', { itemId: 30, slotLimit: 4 })).toBeDefined();
    a.sending(x, T0 + 10, 'dr-x');
    a.slots.createResolved(x.slotId, { kind: 'accepted', taskId: 'tx' }, T0 + 20);
    expect(a.slots.inUse(T0 + 20)).toBe(4); // two held + tx + b's create still in flight
    const yb = b.reserve(T0 + 21, 'create', { itemId: 31, slotLimit: 9 })!;
    b.sending(yb, T0 + 21, 'dr-y');
    b.slots.createResolved(yb.slotId, { kind: 'accepted', taskId: 'ty' }, T0 + 30);
    // counted: tx, ty active (b's other create still in flight is left out of the excess) +
    // 2 held = 4 > 3: one held row released, the oldest.
    const rows = a.store.slots();
    expect(rows.filter((r) => r.kind === 'released').map((r) => r.ref)).toEqual(['dr-held-0']);
    expect(rows.filter((r) => r.kind === 'held').map((r) => r.ref)).toEqual(['dr-held-1']);
  });

  it('freed by `retry --held` stay freed when the run reconciles its rows again', () => {
    const dir = stateDir();
    const a = budget(open(dir), 'run-a');
    const slots = [{ itemId: 1, ref: 'dr-held-1', kind: 'held' as const, sinceMs: T0, expiresMs: T0 + BOUND }];
    a.reconcile({ slots, calls: [], pausedUntil: 0 }, T0, { pid: 11, host: 'h' });
    expect(a.slots.inUse(T0 + 1)).toBe(1);
    expect(open(dir).releaseHeldRefs('run-a', ['dr-held-1'])).toBe(1);
    const restarted = budget(open(dir), 'run-a', {}, T0 + 2);
    restarted.reconcile({ slots, calls: [], pausedUntil: 0 }, T0 + 2, { pid: 12, host: 'h' });
    expect(restarted.slots.inUse(T0 + 3)).toBe(0);
  });
});

describe('whose rows count', () => {
  it("a live owner's creates and tasks count in full; a dead owner's until they expire", () => {
    const dir = stateDir();
    const alive = new Set<number>([101]);
    const other = budget(open(dir), 'run-other');
    other.reconcile(
      {
        slots: [
          { itemId: 1, ref: 'task-1', kind: 'active', sinceMs: T0, expiresMs: T0 + BOUND },
          { itemId: 2, ref: 'task-2', kind: 'active', sinceMs: T0, expiresMs: T0 + BOUND },
        ],
        calls: [],
        pausedUntil: 0,
      },
      T0,
      { pid: 101, host: 'this-host' },
    );
    const me = budget(open(dir), 'run-me', { alive });
    expect(me.slots.inUse(T0 + BOUND + 60_000)).toBe(2); // pid 101 runs: its tasks are tracked
    expect(me.slots.nextChangeAt(T0 + 1)).toBe(T0 + 1 + 2000); // …so look again soon
    alive.delete(101); // it was killed
    expect(me.slots.inUse(T0 + 1)).toBe(2); // its tasks still hold the service's slots
    expect(me.slots.inUse(T0 + BOUND)).toBe(0); // until they could have ended
  });

  it('a run reconciles its own rows from its ledger: stale ones go, ledger calls the store lacks come in once', () => {
    const dir = stateDir();
    const a = budget(open(dir), 'run-a');
    const t = a.reserve(T0, 'create', { itemId: 1 })!;
    a.sending(t, T0, 'dr-1');
    a.answered(t, answer('dr-1'));
    a.slots.createResolved(t.slotId, { kind: 'accepted', taskId: 'task-1' }, T0);
    // Killed; restarted: the ledger says task-1 ended, and it logged two calls, one the store has.
    const again = budget(open(dir), 'run-a', {}, T0 + 10_000);
    const calls = [
      { atMs: T0, kind: 'create' as const, sentRequestId: 'dr-1', answeredMs: T0 + 5, httpStatus: 200, code: 0 },
      { atMs: T0 - 30_000, kind: 'poll' as const, sentRequestId: 'dr-0', answeredMs: T0 - 29_000, httpStatus: 200, code: 0 },
    ];
    again.reconcile({ slots: [], calls, pausedUntil: T0 + 20_000 }, T0 + 10_000, { pid: 1, host: 'h' });
    expect(again.slots.inUse(T0 + 10_000)).toBe(0);
    expect(again.windowsAt(T0 + 10_000).usage(T0 + 10_000)).toEqual({ minute: 2, hour: 2 });
    again.reconcile({ slots: [], calls, pausedUntil: 0 }, T0 + 10_000, { pid: 1, host: 'h' });
    expect(again.windowsAt(T0 + 10_000).usage(T0 + 10_000)).toEqual({ minute: 2, hour: 2 });
    expect(again.windowsAt(T0 + 10_000).availableAt(T0 + 10_000)).toBe(T0 + 20_000); // the ledger's pause, for everyone
    expect(
      budget(open(dir), 'run-b')
        .windowsAt(T0 + 10_000)
        .availableAt(T0 + 10_000),
    ).toBe(T0 + 20_000);
  });
});

describe('what the service says about other clients of the key', () => {
  it('GET /usage: calls the service counts beyond ours are recorded as foreign, for every process', () => {
    const dir = stateDir();
    const a = budget(open(dir), 'run-a');
    for (let i = 0; i < 2; i++) a.reserve(T0 + i, 'poll');
    // The service: 6 used this minute, 40 this hour (its figures count our 2).
    expect(a.adoptUsage({ minuteRemaining: 4, hourRemaining: 60 }, T0 + 5)).toEqual({ minute: 4, hour: 34 });
    const b = budget(open(dir), 'run-b');
    expect(b.windowsAt(T0 + 5).usage(T0 + 5)).toEqual({ minute: 6, hour: 40 });
    expect(b.windowsAt(T0 + 60_006).usage(T0 + 60_006)).toEqual({ minute: 0, hour: 40 });
  });

  it("GET /usage: our calls the service has already forgotten, or made after the reading left, hide none of the others'", () => {
    // A machine that keeps the 1 s arrival margin: its minute window is 61 s long.
    const a = budget(open(stateDir()), 'run-a', { marginMs: 1000 });
    for (let i = 0; i < 4; i++) a.reserve(T0 + i, 'poll');
    a.reserve(T0 + 60_400, 'account'); // the reading
    a.reserve(T0 + 60_450, 'poll'); // left while the reading was on its way
    // At T0 + 60.5 s the service's minute holds the reading and 3 calls of another machine:
    // our four of T0 are a minute old for it (not for our wider window), the last not yet there.
    expect(a.adoptUsage({ minuteRemaining: 6, hourRemaining: 92 }, T0 + 60_500, T0 + 60_400)).toEqual({ minute: 3, hour: 0 });
  });

  it("GET /usage while the key is shared: the others' calls of the last minute keep the share, whatever our margin", () => {
    const a = budget(open(stateDir()), 'run-a', { marginMs: 1000 });
    for (let i = 0; i < 4; i++) a.reserve(T0 + i, 'poll');
    a.adoptOthersTasks(T0 + 10);
    const shared = a.windowsAt(T0 + 10).shareAt(T0 + 10);
    expect(shared).toBeLessThan(1);
    a.reserve(T0 + 60_400, 'account');
    a.adoptUsage({ minuteRemaining: 6, hourRemaining: 90 }, T0 + 60_500, T0 + 60_400);
    expect(a.windowsAt(T0 + 60_500).shareAt(T0 + 60_500)).toBeLessThan(1);
    // The others made none in the last minute: the whole key is ours again at once.
    a.reserve(T0 + 130_000, 'account');
    a.adoptUsage({ minuteRemaining: 9, hourRemaining: 80 }, T0 + 130_100, T0 + 130_000);
    expect(a.windowsAt(T0 + 130_100).shareAt(T0 + 130_100)).toBe(1);
  });

  it('a 429 on api_key_active_tasks no row here explains: the key is shared, for every process on this machine', () => {
    const dir = stateDir();
    const a = budget(open(dir), 'run-a');
    for (let i = 0; i < 4; i++) a.reserve(T0 + i * 100, 'poll');
    expect(a.windowsAt(T0 + 1000).shareAt(T0 + 1000)).toBe(1);
    expect(a.windowsAt(T0 + 1000).availableAt(T0 + 1000)).toBe(T0 + 1000);
    a.adoptOthersTasks(T0 + 1000);
    // 0.7 of what it spent (the whole key, at 4 calls in under a second): 7 calls a minute of 10.
    expect(a.windowsAt(T0 + 1000).shareAt(T0 + 1000)).toBeCloseTo(0.7, 9);
    expect(
      budget(open(dir), 'run-b')
        .windowsAt(T0 + 1000)
        .shareAt(T0 + 1000),
    ).toBeCloseTo(0.7, 9);
    // Calls are spaced under it: the next leaves half its mean gap (60 s / 7 / 2) after the last.
    expect(a.windowsAt(T0 + 1000).availableAt(T0 + 1000)).toBe(T0 + 300 + Math.ceil(60_000 / 14));
  });

  it('a 429 on the minute window while ours shows room fills it until the service said it resets', () => {
    const p = budget(open(stateDir()), 'run-a');
    const t = p.reserve(T0, 'poll')!;
    p.sending(t, T0, 'dr-429');
    p.answered(
      t,
      answer('dr-429', 429, {
        rateLimit: { limit: 10, remaining: 0, resetAtMs: T0 + 20_000, scope: 'api_key_minute' },
        retryAfterMs: 20_000,
      }),
    );
    expect(p.windowsAt(T0 + 1).usage(T0 + 1).minute).toBe(10);
    expect(p.reserve(T0 + 19_999, 'poll')).toBeUndefined();
    expect(p.windowsAt(T0 + 1).availableAt(T0 + 1)).toBe(T0 + 20_000);
    expect(p.windowsAt(T0 + 20_000).usage(T0 + 20_000).minute).toBe(1); // ours, from T0
  });
});
