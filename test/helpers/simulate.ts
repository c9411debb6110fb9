/**
 * The one simulation harness, for the tests and the benchmark alike: the real runner, ledger
 * and client (`runJob`, the very function `darkroom run` calls, discovery included) against
 * the simulator's model in-process, under a virtual clock (docs/ARCHITECTURE.md § Time and
 * simulation): hours of service time pass in milliseconds, and a seed replays a run.
 *
 * It lives with the tests' helpers and `bench/simulate.ts` imports it, so the benchmark
 * measures exactly the set-up the simulation tests prove things with; nothing here imports
 * vitest, so the bench runs it outside a test runner.
 */
import type { WireRequest, WireResponse } from '../../src/api/index.js';
import { installClock, VirtualClock } from '../../src/clock.js';
import { loadConfig, resolveKeys } from '../../src/config/index.js';
import { Ledger } from '../../src/ledger/index.js';
import { silentLogger, type Logger } from '../../src/log.js';
import type { FetchedResult } from '../../src/run/stages/result.js';
import type { RunRequest, RunResult, RunSeams } from '../../src/run/context.js';
import { runJob } from '../../src/run/runner.js';
import type { RunEvent } from '../../src/run/events.js';
import { inProcessResultFetch, inProcessTransport } from '../../src/sim/inprocess.js';
import { SimModel, type Audit, type SimOptions } from '../../src/sim/model.js';
import { Rng } from '../../src/sim/random.js';
import { makeJob, type JobOptions, type TestJob } from './job.js';

export const SIM_KEY = 'sim-test-key-0123456789';
/** The virtual clock's start: an evening, so a night's run crosses midnight. */
export const VIRTUAL_START_MS = Date.UTC(2026, 10, 22, 20, 0, 0);
const BASE_URL = 'http://sim.invalid';
const RESULT_ORIGIN = 'http://results.invalid';
/** A run still going after this much virtual time is stuck. */
const DEFAULT_MAX_MS = 48 * 3_600_000;

export interface SimulateOptions extends JobOptions {
  /** The job folder; without it one is made from the JobOptions (photos, steps, extra). */
  readonly job?: TestJob;
  /** A jobs YAML of the caller's own (the benchmark's), instead of `job`. */
  readonly jobsFile?: string;
  /** API keys by the variable the job names them with; default DARKROOM_TEST_KEY = SIM_KEY. */
  readonly keys?: Readonly<Record<string, string>>;
  /** The simulator (a new model): the keys above, result origin, passthrough results and `seed` unless given here. */
  readonly sim?: Partial<SimOptions>;
  /** Seeds the runner's jitter and, unless `sim.seed` says otherwise, the simulator. Default 1. */
  readonly seed?: number;
  /** A ledger kept from an earlier run, or where to open one: a file or ':memory:' (the default). */
  readonly ledger?: Ledger | string;
  /** A model and a clock kept from an earlier run (a rerun: the same service, time going on). */
  readonly model?: SimModel;
  readonly clock?: VirtualClock;
  /** Where a new clock starts; default VIRTUAL_START_MS. */
  readonly startMs?: number;
  /** Give up after this much virtual time (the clock throws); default 48 h. */
  readonly maxMs?: number;
  /** Result URLs fetched are pushed here, in order (downloads are not API calls, so the audit does not see them). */
  readonly fetched?: string[];
  readonly intercept?: (req: WireRequest, forward: () => Promise<WireResponse>) => Promise<WireResponse>;
  /** Stand between the downloader and the simulator's result origin (a result host that is down, say). */
  readonly resultIntercept?: (url: URL, forward: () => Promise<FetchedResult>) => Promise<FetchedResult>;
  /** More of the run's request: its seams (a test's output file system, the grace after a stop, ExifTool) and --redo-steps. */
  readonly runOptions?: RunSeams & Pick<RunRequest, 'redoSteps' | 'follow' | 'guards'>;
  readonly signal?: AbortSignal;
  /** The run's events, as `run --json` writes them. */
  readonly onEvent?: (e: RunEvent) => void;
  /** The run's log (silent by default). */
  readonly log?: Logger;
  /** The key stores' folder (as DARKROOM_STATE_DIR); without it each run has a private in-memory store. */
  readonly stateDir?: string;
}

export interface Simulated {
  readonly job: TestJob | undefined;
  readonly model: SimModel;
  readonly ledger: Ledger;
  readonly clock: VirtualClock;
  readonly result: RunResult;
  readonly audit: Audit;
  /** Virtual time at the run's start and end. */
  readonly startMs: number;
  readonly endMs: number;
}

/** What a rerun keeps: pass it back to `simulate` (spread, with more options) for the next run. */
export interface SimSession extends SimulateOptions {
  readonly job: TestJob;
  readonly model: SimModel;
  readonly ledger: Ledger;
  readonly clock: VirtualClock;
  readonly fetched: string[];
}

/**
 * One job across runs, as an operator's nights: the model, ledger and clock made once from
 * `opts` and kept, with the result fetches of every run counted in `fetched`.
 */
export function simSession(opts: SimulateOptions & { readonly job: TestJob }): SimSession {
  return {
    ...opts,
    model: opts.model ?? newModel(opts),
    ledger: opts.ledger instanceof Ledger ? opts.ledger : Ledger.open(opts.ledger ?? ':memory:'),
    clock: opts.clock ?? new VirtualClock(opts.startMs ?? VIRTUAL_START_MS),
    fetched: opts.fetched ?? [],
  };
}

/** One run of the job through the real runner against the simulator, under the virtual clock. */
export async function simulate(opts: SimulateOptions & { readonly jobsFile: string }): Promise<Simulated>;
export async function simulate(opts?: SimulateOptions): Promise<Simulated & { readonly job: TestJob }>;
export async function simulate(opts: SimulateOptions = {}): Promise<Simulated> {
  const job = opts.job ?? (opts.jobsFile === undefined ? await makeJob({ ...opts, baseUrl: BASE_URL }) : undefined);
  const jobsFile = opts.jobsFile ?? job!.jobsFile;
  const vc = opts.clock ?? new VirtualClock(opts.startMs ?? VIRTUAL_START_MS);
  const restore = installClock(vc);
  const ownLedger = !(opts.ledger instanceof Ledger);
  const ledger = opts.ledger instanceof Ledger ? opts.ledger : Ledger.open(opts.ledger ?? ':memory:');
  try {
    const model = opts.model ?? newModel(opts);
    const config = loadConfig(jobsFile, { env: {} });
    const keys = resolveKeys(config, opts.keys ?? { DARKROOM_TEST_KEY: SIM_KEY });
    // The runner's jitter, seeded: the simulator's generator on a stream of its own.
    const rng = new Rng(opts.seed ?? 1, 7919);
    const random = () => rng.uniform();
    const startMs = vc.now();
    let finished = false;
    const { redoSteps, follow, guards, ...seams } = opts.runOptions ?? {};
    const request: RunRequest = {
      config,
      baseUrl: BASE_URL,
      keys,
      redoSteps,
      follow,
      guards,
      signal: opts.signal,
      onEvent: opts.onEvent,
      stateDir: opts.stateDir,
      seams: {
        transport: inProcessTransport(model, opts.intercept),
        resultFetch: resultFetchFor(inProcessResultFetch(model), opts),
        random,
        ...seams,
      },
    };
    const p = runJob(request, ledger, opts.log ?? silentLogger()).finally(() => {
      finished = true;
    });
    p.catch(() => {}); // a crash is rethrown by `await p` below, once the clock has stopped
    await vc.run(() => finished, { maxMs: opts.maxMs ?? DEFAULT_MAX_MS });
    const result = await p;
    return { job, model, ledger, result, audit: model.audit(), startMs, endMs: vc.now(), clock: vc };
  } catch (err) {
    if (ownLedger) ledger.close();
    throw err;
  } finally {
    restore();
  }
}

function newModel(opts: SimulateOptions): SimModel {
  return new SimModel({
    keys: Object.values(opts.keys ?? { DARKROOM_TEST_KEY: SIM_KEY }),
    seed: opts.seed ?? 1,
    resultOrigin: RESULT_ORIGIN,
    processing: 'passthrough',
    ...opts.sim,
  });
}

function resultFetchFor(base: (url: URL) => Promise<FetchedResult>, opts: SimulateOptions): (url: URL) => Promise<FetchedResult> {
  const seen = opts.fetched;
  const counted = seen ? (url: URL) => (seen.push(url.href), base(url)) : base;
  const intercept = opts.resultIntercept;
  return intercept ? (url) => intercept(url, () => counted(url)) : counted;
}
