import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { KeyBudget } from '../../src/scheduler/budget/keyBudget.js';
import { callAnswer, keyStores } from '../helpers/keyStores.js';

/**
 * Two darkroom processes on one key (cli.shared-key.test.ts failed once under load with
 * two 429s on api_key_active_tasks): a process's write to the key's store that waits for
 * the store's lock while another process commits must not hide that commit from its copy.
 * The copy (keyCache.ts) tells its own writes from others' by the store's version read
 * before and after the write; a commit that lands while the write waits for the lock
 * changed the version too, and was once taken for the process's own: the other process's
 * create was never read, the slots were undercounted, and a fourth create went out.
 *
 * The other process here is a worker thread on its own connection: it takes the lock,
 * writes a create's slot row, and commits only once this one has started its write.
 */

const T0 = Date.UTC(2026, 10, 22, 20);
const FP = 'k_0123456789ab';
const LIMITS = { callsPerMinute: 100, callsPerHour: 1000, activeTasks: 3 };
const BETTER_SQLITE3 = createRequire(import.meta.url).resolve('better-sqlite3');

const { stateDir, open, clock } = keyStores(T0, FP);
const answer = (sentRequestId: string) => callAnswer(T0, sentRequestId);

function budget(): { a: KeyBudget; file: string } {
  const store = open(stateDir());
  const a = new KeyBudget(
    store,
    {
      owner: 'run-a',
      limits: LIMITS,
      taskBoundMs: () => 5 * 60_000,
      callTimeoutMs: 1000,
      marginMs: 1000,
      createReserve: 0,
      liveness: () => true,
    },
    T0,
  );
  return { a, file: store.file };
}

/**
 * Another process's create, committed while `write` waits for the lock: the worker holds
 * the lock with its row written, and commits 200 ms after `write` has begun.
 */
async function commitDuring(file: string, write: () => void): Promise<void> {
  const flags = new Int32Array(new SharedArrayBuffer(8)); // [0]: locked · [1]: write begun
  const worker = new Worker(
    `const { workerData: w } = require('node:worker_threads');
     const db = new (require(w.lib))(w.file);
     db.pragma('busy_timeout = 5000');
     db.exec('BEGIN IMMEDIATE');
     db.prepare("INSERT INTO slots (owner, item_id, ref, kind, since_ms, expires_ms) VALUES ('run-b', 1, NULL, 'create', ?, ?)").run(w.since, w.since + 600000);
     Atomics.store(w.flags, 0, 1); Atomics.notify(w.flags, 0);
     while (Atomics.load(w.flags, 1) === 0) Atomics.wait(w.flags, 1, 0, 10);
     Atomics.wait(w.flags, 1, 1, 200);
     db.exec('COMMIT');
     db.close();`,
    { eval: true, workerData: { lib: BETTER_SQLITE3, file, since: T0 + 10_000, flags } },
  );
  const exited = new Promise<number>((resolve, reject) => {
    worker.once('error', reject);
    worker.once('exit', resolve);
  });
  while (Atomics.load(flags, 0) === 0) await new Promise((r) => setTimeout(r, 5));
  Atomics.store(flags, 1, 1);
  write();
  expect(await exited).toBe(0);
}

describe("a write to the key store that waits for another process's commit", () => {
  it("a task's end: the other process's create is still counted, and no fourth create is reserved", async () => {
    const { a, file } = budget();
    const t = a.reserve(T0, 'create', { itemId: 1 })!;
    a.sending(t, T0, 'dr-c1');
    a.answered(t, answer('dr-c1'));
    a.slots.createResolved(t.slotId, { kind: 'accepted', taskId: 't1' }, T0);
    a.settle(t);
    expect(a.slots.inUse(T0 + 500)).toBe(1);

    await commitDuring(file, () => a.slots.taskEnded('t1'));

    expect(a.slots.inUse(T0 + 1000)).toBe(1);
    expect(a.reserve(T0 + 1000, 'create', { itemId: 2 })).toBeDefined();
    expect(a.reserve(T0 + 1001, 'create', { itemId: 3 })).toBeDefined();
    expect(a.reserve(T0 + 1002, 'create', { itemId: 4 })).toBeUndefined();
  });

  it("a late answer (its call re-timed, then completed): the other process's create is still counted", async () => {
    const { a, file } = budget();
    const t = a.reserve(T0, 'poll')!;
    a.sending(t, T0, 'dr-p1');
    clock().advanceTo(T0 + 5_000); // read late: the call is re-timed to its answer less the margin
    expect(a.slots.inUse(T0 + 5_000)).toBe(0);

    await commitDuring(file, () => a.answered(t, answer('dr-p1')));
    a.settle(t);

    expect(a.slots.inUse(T0 + 5_500)).toBe(1);
    expect(a.reserve(T0 + 5_500, 'create', { itemId: 2 })).toBeDefined();
    expect(a.reserve(T0 + 5_501, 'create', { itemId: 3 })).toBeDefined();
    expect(a.reserve(T0 + 5_502, 'create', { itemId: 4 })).toBeUndefined();
  });
});
