/**
 * The caller's code a run calls (issue 15, hostile report 1): an `onEvent` that throws, or a
 * logger that throws, never escapes as the host process's unhandled rejection or uncaught
 * exception. A throwing handler stops the run as an abort would, `run()` rejects
 * `EVENT_HANDLER` with the handler's error as `cause` and the figures so far, and the next
 * run finishes with one create per photo.
 */
import pino from 'pino';
import { Writable } from 'node:stream';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { run, status, type RunEvent } from '../../src/index.js';
import { startSimulator, type Simulator } from '../../src/simulator.js';
import { testStateDir } from '../helpers/cli.js';
import { makeJob, type TestJob } from '../helpers/job.js';
import { RunStoppedError } from '../../src/errors.js';

let sim: Simulator;
const jobs: TestJob[] = [];
const escaped: unknown[] = [];
const onUnhandled = (reason: unknown) => escaped.push(reason);
const onUncaught = (err: unknown) => escaped.push(err);

beforeAll(async () => {
  process.env.DARKROOM_STATE_DIR = testStateDir();
  // A key per job: a stopped run's tasks keep the key's task slots at the service until they end.
  sim = await startSimulator({ latencyMs: 200, sigma: 0.1, keys: Array.from({ length: 8 }, (_, i) => `sim-key-${i}`) });
});
afterAll(async () => {
  await sim.close();
  for (const j of jobs) j.cleanup();
});
beforeEach(() => {
  escaped.length = 0;
  process.on('unhandledRejection', onUnhandled);
  process.on('uncaughtExceptionMonitor', onUncaught);
});
afterEach(() => {
  process.off('unhandledRejection', onUnhandled);
  process.off('uncaughtExceptionMonitor', onUncaught);
});

/** A job of six photos, and a key of its own. */
async function sixPhotos(): Promise<TestJob & { readonly apiKey: string }> {
  const job = await makeJob({ photos: 6, baseUrl: sim.url, steps: [{ capability: 'enhance' }] });
  jobs.push(job);
  return { ...job, apiKey: sim.keys[jobs.length - 1]! };
}

/** Past the microtasks and the turn where Node reports a rejection nobody handled. */
const settled = () => new Promise<void>((r) => setImmediate(r));

describe('an onEvent handler that throws', () => {
  it('on a done event: the run stops as an abort, rejects EVENT_HANDLER with the cause and the figures, and nothing escapes', async () => {
    const job = await sixPhotos();
    const before = sim.creates();
    const bug = new Error('studio handler bug');
    const seen: RunEvent['type'][] = [];
    const err = await run(job.jobsFile, {
      apiKey: job.apiKey,
      onEvent: (e) => {
        seen.push(e.type);
        if (e.type === 'done') throw bug;
      },
    }).catch((e: unknown) => e);
    await settled();
    expect(escaped).toEqual([]);
    expect(err).toBeInstanceOf(RunStoppedError);
    const stopped = err as RunStoppedError;
    expect(stopped.code).toBe('EVENT_HANDLER');
    expect(stopped.cause).toBe(bug);
    expect(stopped.message).toContain('studio handler bug');
    // The throw was the last event the handler got.
    expect(seen.at(-1)).toBe('done');
    expect(seen.filter((t) => t === 'done')).toHaveLength(1);
    expect(stopped.summary.total).toBe(6);
    expect(stopped.summary.done).toBeGreaterThanOrEqual(1);
    expect(stopped.summary.interrupted).toBe(true);

    // The ledger is consistent: no create left in flight, every photo done or pending.
    const st = await status(job.jobsFile);
    expect(st.states.submitting).toBe(0);
    expect(st.held + st.failed).toBe(0);
    expect(st.done + st.pending).toBe(6);

    const again = await run(job.jobsFile, { apiKey: job.apiKey });
    expect(again.done).toBe(6);
    expect(again.exitCode).toBe(0);
    // One create per photo across both runs.
    expect(sim.creates() - before).toBe(6);
    await settled();
    expect(escaped).toEqual([]);
  });

  it('on done, on every kind of event: never an unhandled rejection, always EVENT_HANDLER', async () => {
    for (const type of ['done', 'summary'] as const) {
      const job = await sixPhotos();
      const err = await run(job.jobsFile, {
        apiKey: job.apiKey,
        onEvent: (e) => {
          if (e.type === type) throw new Error(`bug on ${type}`);
        },
      }).catch((e: unknown) => e);
      await settled();
      expect(escaped, type).toEqual([]);
      expect((err as RunStoppedError).code, type).toBe('EVENT_HANDLER');
      expect((err as RunStoppedError).summary.total, type).toBe(6);
      // On the summary itself the run had ended: its figures are the run's own.
      if (type === 'summary') expect((err as RunStoppedError).summary.done).toBe(6);
    }
  });
});

describe('a logger that throws', () => {
  it('loses its lines, never the run: the run ends done and nothing escapes', async () => {
    const job = await sixPhotos();
    const broken = new Writable({
      write() {
        throw new Error('log destination broken');
      },
    });
    const logger = pino(
      {
        level: 'debug',
        hooks: {
          logMethod: () => {
            throw new Error('logger hook bug');
          },
        },
      },
      broken,
    );
    const summary = await run(job.jobsFile, { apiKey: job.apiKey, logger });
    await settled();
    expect(escaped).toEqual([]);
    expect(summary.done).toBe(6);
  });
});
