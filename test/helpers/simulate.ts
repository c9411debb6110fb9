import type { WireRequest, WireResponse } from '../../src/api/index.js';
import { installClock, VirtualClock } from '../../src/clock.js';
import { loadConfig, resolveKeys } from '../../src/config/index.js';
import { Ledger } from '../../src/ledger/index.js';
import { silentLogger, type Logger } from '../../src/log.js';
import type { FetchedResult } from '../../src/stages/result.js';
import { runJob, type RunOptions, type RunResult } from '../../src/run/runner.js';
import { inProcessResultFetch, inProcessTransport } from '../../src/sim/inprocess.js';
import { SimModel } from '../../src/sim/model.js';
import { Rng } from '../../src/sim/random.js';
import type { SimOptions } from '../../src/sim/options.js';
import { makeJob, type JobOptions, type TestJob } from './job.js';

export interface SimulateOptions extends JobOptions {
  readonly sim?: Partial<Omit<SimOptions, 'keys' | 'resultOrigin'>>;
  readonly seed?: number;
  readonly intercept?: (req: WireRequest, forward: () => Promise<WireResponse>) => Promise<WireResponse>;
  /** Stand between the downloader and the simulator's result origin (a result host that is down, say). */
  readonly resultIntercept?: (url: URL, forward: () => Promise<FetchedResult>) => Promise<FetchedResult>;
  /** More of runJob's options (a test's output file system, say). */
  readonly runOptions?: Partial<Pick<RunOptions, 'outputFs'>>;
  /** Reuse a job folder and ledger (a restart). */
  readonly job?: TestJob;
  readonly ledger?: Ledger;
  readonly model?: SimModel;
  readonly clock?: VirtualClock;
  readonly signal?: AbortSignal;
  /** The run's log (silent by default). */
  readonly log?: Logger;
  /** The key stores' folder (as DARKROOM_STATE_DIR); without it each run has a private in-memory store. */
  readonly stateDir?: string;
}

export const SIM_KEY = 'sim-test-key-0123456789';

/**
 * The real runner, ledger and client against the simulator's model in-process, under a
 * virtual clock: minutes of service time pass in milliseconds, and a seed replays a run.
 */
export async function simulate(opts: SimulateOptions = {}) {
  const job = opts.job ?? (await makeJob({ ...opts, baseUrl: 'http://sim.invalid' }));
  const vc = opts.clock ?? new VirtualClock(Date.UTC(2026, 10, 22, 20, 0, 0));
  const restore = installClock(vc);
  try {
    const model =
      opts.model ??
      new SimModel({ keys: [SIM_KEY], seed: opts.seed ?? 1, resultOrigin: 'http://results.invalid', processing: 'passthrough', ...opts.sim });
    const config = loadConfig(job.jobsFile, { env: {} });
    const keys = resolveKeys(config, { DARKROOM_TEST_KEY: SIM_KEY });
    const ledger = opts.ledger ?? Ledger.open(':memory:');
    // The runner's jitter, seeded: the simulator's generator on a stream of its own.
    const rng = new Rng(opts.seed ?? 1, 7919);
    const random = () => rng.uniform();
    const startMs = vc.now();
    let finished = false;
    const p = runJob({
      config,
      baseUrl: 'http://sim.invalid',
      keys,
      ledger,
      log: opts.log ?? silentLogger(),
      transport: inProcessTransport(model, opts.intercept),
      resultFetch: resultFetchFor(inProcessResultFetch(model), opts.resultIntercept),
      random,
      ...opts.runOptions,
      ...(opts.signal ? { signal: opts.signal } : {}),
      ...(opts.stateDir !== undefined ? { stateDir: opts.stateDir } : {}),
    }).finally(() => {
      finished = true;
    });
    await vc.run(() => finished, { maxMs: 48 * 3_600_000 });
    const result: RunResult = await p;
    return { job, model, ledger, result, audit: model.audit(), startMs, endMs: vc.now(), clock: vc };
  } finally {
    restore();
  }
}

function resultFetchFor(
  base: (url: URL) => Promise<FetchedResult>,
  intercept: SimulateOptions['resultIntercept'],
): (url: URL) => Promise<FetchedResult> {
  return intercept ? (url) => intercept(url, () => base(url)) : base;
}
