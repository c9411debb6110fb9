import { describe, expect, it } from 'vitest';
import { KeyBudget } from '../../src/scheduler/budget/keyBudget.js';
import { callAnswer, keyStores } from '../helpers/keyStores.js';

/**
 * A task darkroom gives up on without seeing it end — held at the polling cap, or its polls
 * refused — may still run at the service, which counts it against the key's 3 slots. Its
 * slot row must stay counted (as a held one) until the task could have ended, or a create
 * sent into the slot it seemed to free meets a 429 on api_key_active_tasks.
 */

const T0 = Date.UTC(2026, 10, 22, 20);
const FP = 'k_0a1b2c3d4e5f';
const LIMITS = { callsPerMinute: 100, callsPerHour: 1000, activeTasks: 3 };
const BOUND_MS = 10 * 60_000;

const { stateDir, open } = keyStores(T0, FP);

function budget(): KeyBudget {
  return new KeyBudget(
    open(stateDir()),
    {
      owner: 'run-a',
      limits: LIMITS,
      taskBoundMs: () => BOUND_MS,
      callTimeoutMs: 1000,
      marginMs: 1000,
      createReserve: 0,
      liveness: () => true,
    },
    T0,
  );
}

/** A create sent at `at` and accepted as `taskId`. */
function accepted(a: KeyBudget, at: number, itemId: number, taskId: string): void {
  const t = a.reserve(at, 'create', { itemId });
  expect(t).toBeDefined();
  const id = `dr-${taskId}`;
  a.sending(t!, at, id);
  a.answered(t!, callAnswer(at, id, 200, { method: 'POST', endpoint: '/api/v1/restore' }));
  a.slots.createResolved(t!.slotId, { kind: 'accepted', taskId }, at);
  a.settle(t!);
}

/** Three tasks running, accepted just after T0. */
function threeRunning(a: KeyBudget): void {
  for (let i = 1; i <= 3; i++) accepted(a, T0 + i, i, `t${i}`);
}

describe('a task given up while it may still run', () => {
  it('keeps its slot counted until it could have ended; a task seen ending frees its slot at once', () => {
    const a = budget();
    threeRunning(a);
    expect(a.slots.inUse(T0 + 10)).toBe(3);

    a.slots.taskGivenUp('t1');
    expect(a.slots.inUse(T0 + 20)).toBe(3);
    expect(a.reserve(T0 + 20, 'create', { itemId: 4 })).toBeUndefined();
    // …until the task bound from its start has passed
    expect(a.slots.inUse(T0 + 1 + BOUND_MS + 1)).toBe(2);

    a.slots.taskEnded('t2');
    expect(a.slots.inUse(T0 + 1 + BOUND_MS + 2)).toBe(1);
  });

  it('a create the service accepts beyond the count shows the given-up task ended: its held row gives way', () => {
    const a = budget();
    threeRunning(a);
    a.slots.taskGivenUp('t1');
    // the service took a fourth create (sent under a higher limit): t1 cannot be running
    const t = a.reserve(T0 + 100, 'create', { itemId: 4, slotLimit: 4 });
    expect(t).toBeDefined();
    a.sending(t!, T0 + 100, 'dr-t4');
    a.answered(t!, callAnswer(T0 + 100, 'dr-t4', 200, { method: 'POST', endpoint: '/api/v1/restore' }));
    a.slots.createResolved(t!.slotId, { kind: 'accepted', taskId: 't4' }, T0 + 100);
    a.settle(t!);
    expect(a.slots.inUse(T0 + 101)).toBe(3);
  });
});
