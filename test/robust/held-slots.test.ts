import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { retryCommand } from '../../src/cli/commands/retry.js';
import { fingerprintKey } from '../../src/spec/key.js';
import { installClock, VirtualClock } from '../../src/clock.js';
import { Ledger } from '../../src/ledger/index.js';
import { KeyStore } from '../../src/keystore/store.js';
import { SimModel } from '../../src/sim/model.js';
import { taskBoundMs } from '../../src/scheduler/budget/keySlots.js';
import { makeJob, makeTempDir, writePhoto } from '../helpers/job.js';
import { SIM_KEY, simulate } from '../helpers/simulate.js';
import { TransportError } from '../../src/errors.js';

/**
 * A create whose answer was lost may be running at the service. Its slot counts as occupied
 * for as long as such a task could run (from the latencies observed), so it never leads to
 * a fourth task; but whether it still runs only the service knows, so once such a task has
 * likely ended the run asks, with a create (a probe): accepted, the slot was free; refused
 * (429 on api_key_active_tasks, no credit), it waits longer.
 */

const FP = fingerprintKey(SIM_KEY);
const cleanups: (() => void)[] = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

const isCreate = (url: string) => url.endsWith('/generate');

describe("held creates and the key's task slots", () => {
  it('a create whose connection was dropped holds its slot: never more than 3 tasks; refused only probes, each a while after a held create', async () => {
    const stateDir = path.join(makeTempDir(), 'state');
    const r = await simulate({
      photos: 12,
      seed: 3,
      stateDir,
      steps: [{ capability: 'enhance' }],
      sim: { faults: { droppedCreate: { probability: 0.3 } }, latency: { medianMs: 20_000, sigma: 0.5 } },
    });
    cleanups.push(r.job.cleanup);
    const k = r.audit.keys[FP]!;
    const held = r.audit.faults.droppedCreate;
    expect(held).toBeGreaterThanOrEqual(2);
    expect(r.result.status.held).toBe(held);
    expect(r.result.status.pending).toBe(0);
    expect(k.maxActiveTasks).toBeLessThanOrEqual(3);
    // The held tasks ran on (20 s each): the probes sent a task's latency after each was held
    // met some of them. Only slot refusals, no more than one per held create (seed 3: 3 of 3).
    expect(k.rejected429).toBe(k.rejectedByScope.api_key_active_tasks ?? 0);
    expect(k.rejected429).toBeLessThanOrEqual(held);
    expect(Object.values(r.audit.createsPerSource).every((n) => n === 1)).toBe(true);
    // A refused probe is explained by the held rows: no sign of another client of the key,
    // so the machine's share of it never fell.
    const store = KeyStore.openFor(stateDir, FP);
    cleanups.push(() => store.close());
    expect(store.getMeta('share')).toBeUndefined();
  });

  it('a resumed run asks the service once a held task has likely ended, instead of waiting as long as one could run', async () => {
    const job = await makeJob({ photos: 6, steps: [{ capability: 'enhance' }] });
    cleanups.push(job.cleanup);
    const clock = new VirtualClock(Date.UTC(2026, 10, 22, 20));
    // Tasks take about a minute; every create is accepted.
    const model = new SimModel({
      keys: [SIM_KEY],
      seed: 5,
      resultOrigin: 'http://results.invalid',
      processing: 'passthrough',
      latency: { medianMs: 60_000, sigma: 0.2 },
    });
    const ledger = Ledger.open(':memory:');
    cleanups.push(() => ledger.close());

    // Run 1: three tasks run and end (their latencies are observed); the answers of the
    // next three creates are lost once the request was written. Their tasks run on.
    let creates = 0;
    const first = await simulate({
      job,
      ledger,
      model,
      clock,
      intercept: async (req, forward) => {
        if (isCreate(req.url) && ++creates > 3) {
          await forward();
          throw new TransportError('socket reset after the request was written', 'ECONNRESET', true);
        }
        return forward();
      },
    });
    expect(first.result.status).toMatchObject({ done: 3, held: 3 });
    expect(first.audit.keys[FP]!.activeNow).toBe(3); // the three held tasks are running

    // Run 2, at once, with three new photos: the held creates' slots are full.
    for (let i = 0; i < 3; i++) await writePhoto(path.join(job.inputDir, `later-${i}.jpg`), 40 + i);
    // The task bound and the typical latency the second run starts with, from the tasks run 1
    // saw end (read now: run 2's own, once they end, add theirs).
    const bound = taskBoundMs(ledger.keyFacts.longestRecentLatencyMs(), 30 * 60_000);
    const typical = ledger.keyFacts.typicalRecentLatencyMs()!;
    const sent: { atMs: number; status: number }[] = [];
    const second = await simulate({
      job,
      ledger,
      model,
      clock,
      intercept: async (req, forward) => {
        const res = await forward();
        if (isCreate(req.url)) sent.push({ atMs: clock.now(), status: res.status });
        return res;
      },
    });
    expect(second.result.status).toMatchObject({ done: 6, held: 3, pending: 0 });
    const k = second.audit.keys[FP]!;
    expect(k.maxActiveTasks).toBeLessThanOrEqual(3);
    // Refused creates are probes of the held slots, answered 429 on active tasks (no credit).
    expect(k.rejected429).toBe(k.rejectedByScope.api_key_active_tasks ?? 0);
    expect(Object.values(second.audit.createsPerSource).every((n) => n === 1)).toBe(true);

    const givenUp = ledger.items
      .all()
      .flatMap((i) => ledger.submissions.forItem(i.id))
      .filter((s) => s.state === 'ambiguous')
      .map((s) => Math.min(s.resolved_ms!, s.sent_ms + 30_000))
      .sort((a, b) => a - b);
    expect(givenUp).toHaveLength(3);
    // The first create: a probe once the oldest held task has had the typical latency to
    // end (within the 5 s the lane takes to look again), long before the task bound.
    expect(bound).toBeGreaterThan(2 * typical);
    expect(sent[0]!.atMs).toBeGreaterThanOrEqual(givenUp[0]! + typical);
    expect(sent[0]!.atMs).toBeLessThanOrEqual(givenUp[0]! + typical + 6_000);
  });

  it("`retry --held` frees the held creates' slots: the operator decided, the next run creates at once", async () => {
    const job = await makeJob({ photos: 3, steps: [{ capability: 'enhance' }] });
    cleanups.push(job.cleanup);
    const stateDir = path.join(job.dir, 'key-state');
    const clock = new VirtualClock(Date.UTC(2026, 10, 22, 20));
    const model = new SimModel({
      keys: [SIM_KEY],
      seed: 6,
      resultOrigin: 'http://results.invalid',
      processing: 'passthrough',
      latency: { medianMs: 20_000, sigma: 0.2 },
    });
    // Run 1: every create's answer is lost; three held creates hold the key's three slots.
    const lost = Ledger.open(job.ledgerFile);
    const first = await simulate({
      job,
      ledger: lost,
      model,
      clock,
      stateDir,
      intercept: async (req, forward) => {
        if (!isCreate(req.url)) return forward();
        await forward();
        throw new TransportError('socket reset after the request was written', 'ECONNRESET', true);
      },
    }).finally(() => lost.close());
    expect(first.result.status).toMatchObject({ held: 3 });
    const store = KeyStore.openFor(stateDir, FP);
    cleanups.push(() => store.close());
    expect(store.slots().map((s) => s.kind)).toEqual(['held', 'held', 'held']);

    // The operator's command, at the simulation's time.
    const restore = installClock(clock);
    const r = await retryCommand(
      { jobs: job.jobsFile, held: true, yes: true },
      { env: { DARKROOM_STATE_DIR: stateDir }, interactive: false, ask: async () => false },
    ).finally(restore);
    expect(r.exitCode).toBe(0);
    expect(store.slots().map((s) => s.kind)).toEqual(['released', 'released', 'released']);

    // The next run creates again at once, not after the held tasks' bound (10 min: none was
    // seen to end). A second charge is possible: the operator's choice. Here the tasks are
    // in fact still running, so the service answers 429 on active tasks until they end.
    const started = clock.now();
    const sent: number[] = [];
    const ledger = Ledger.open(job.ledgerFile);
    cleanups.push(() => ledger.close());
    const second = await simulate({
      job,
      ledger,
      model,
      clock,
      stateDir,
      intercept: async (req, forward) => {
        if (isCreate(req.url)) sent.push(clock.now());
        return forward();
      },
    });
    expect(second.result.status).toMatchObject({ done: 3, held: 0 });
    // Seconds (the first contact, the usage seeding, the runner's jitter), not the 10 minutes.
    expect(sent[0]! - started).toBeLessThan(5_000);
  });
});
