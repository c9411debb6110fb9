/**
 * What a program hands the library (issue 15, hostile reports 4 and 5): null or undefined
 * options are `{}` in every public function; a bad `apiKey` (or `signal`, `onEvent`) is a
 * CONFIG error that names the option, not an environment variable the caller never used;
 * and the same wrong base URL stops run() with the code plan() gives for it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DarkroomError, plan, retry, run, status } from '../../src/index.js';
import { startSimulator, type Simulator } from '../../src/simulator.js';
import { testStateDir } from '../helpers/cli.js';
import { listenLocal, type LocalServer } from '../helpers/http.js';
import { makeJob, type TestJob } from '../helpers/job.js';
import { simulate } from '../helpers/simulate.js';
import { RunStoppedError, TransportError } from '../../src/errors.js';

let sim: Simulator;
let job: TestJob;
let notTheApi: LocalServer;

beforeAll(async () => {
  process.env.DARKROOM_STATE_DIR = testStateDir();
  sim = await startSimulator({ latencyMs: 50, sigma: 0.1 });
  job = await makeJob({ photos: 2, baseUrl: sim.url, steps: [{ capability: 'enhance' }] });
  // A web server's 404 page where the API should be.
  notTheApi = await listenLocal((_req, res) => {
    res.writeHead(404, { 'content-type': 'text/html' });
    res.end('<html><body>Not Found</body></html>');
  });
});
afterAll(async () => {
  await sim.close();
  await notTheApi.close();
  job.cleanup();
});

async function rejection(p: Promise<unknown>): Promise<DarkroomError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(DarkroomError);
  return err as DarkroomError;
}

describe('null or undefined options', () => {
  it('are {} for run, status, plan and retry', async () => {
    // The job names DARKROOM_TEST_KEY: with no options, the key comes from there.
    process.env.DARKROOM_TEST_KEY = sim.keys[0];
    try {
      const summary = await run(job.jobsFile, null);
      expect(summary.done).toBe(2);
      expect((await status(job.jobsFile, null)).done).toBe(2);
      expect((await plan(job.jobsFile, null)).photos).toBe(0);
      expect(await retry(job.jobsFile, null, null)).toEqual({ recreated: 0, repolled: 0, downloads: 0, note: null });
      expect(await retry(job.jobsFile, undefined)).toEqual({ recreated: 0, repolled: 0, downloads: 0, note: null });
    } finally {
      delete process.env.DARKROOM_TEST_KEY;
    }
  });
});

describe('an option that cannot be used', () => {
  it('an empty or blank apiKey is CONFIG naming the apiKey option, not the environment variable', async () => {
    for (const apiKey of ['', '   ']) {
      const err = await rejection(run(job.jobsFile, { apiKey }));
      expect(err.code).toBe('CONFIG');
      expect(err.message).toContain('the apiKey option');
      expect(err.message).not.toContain('environment variable');
    }
  });

  it('an apiKey with a line break, a signal that is not one, an onEvent that is not a function: CONFIG before any work', async () => {
    const bad = [
      { apiKey: 'sim-key\nx' },
      { apiKey: sim.keys[0], signal: {} as AbortSignal },
      { apiKey: sim.keys[0], onEvent: 5 as unknown as () => void },
    ];
    for (const opts of bad) {
      const err = await rejection(run(job.jobsFile, opts));
      expect(err.code).toBe('CONFIG');
      expect(err.message.split('\n')).toHaveLength(1);
    }
  });
});

describe('a base URL that is not the service', () => {
  it('run() and plan() reject with the same code: NOT_THE_SERVICE', async () => {
    const opts = { apiKey: sim.keys[0], baseUrl: notTheApi.origin, ledger: `${job.dir}/other.db` };
    const fromPlan = await rejection(plan(job.jobsFile, opts));
    const fromRun = await rejection(run(job.jobsFile, opts));
    expect(fromPlan.code).toBe('NOT_THE_SERVICE');
    expect(fromRun).toBeInstanceOf(RunStoppedError);
    expect(fromRun.code).toBe(fromPlan.code);
    expect((fromRun as RunStoppedError).summary.pending).toBe(2);
  });

  it('nothing answering: plan() says SERVICE_UNREACHABLE, and so does the run once its first-contact window is over', async () => {
    const fromPlan = await rejection(
      plan(job.jobsFile, { apiKey: sim.keys[0], baseUrl: 'http://127.0.0.1:9', ledger: `${job.dir}/dead.db` }),
    );
    expect(fromPlan.code).toBe('SERVICE_UNREACHABLE');
    // The run waits out its 20 s window before it stops: on the virtual clock.
    const {
      result,
      job: simulated,
      ledger,
    } = await simulate({
      photos: 1,
      intercept: () => Promise.reject(new TransportError('connect ECONNREFUSED 127.0.0.1:9', 'ECONNREFUSED', false)),
    });
    expect(result.halt?.kind).toBe('config');
    expect(result.halt?.code).toBe(fromPlan.code);
    expect(result.exitCode).toBe(2);
    ledger.close();
    simulated.cleanup();
  });
});
