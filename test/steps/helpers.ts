import { readFileSync, writeFileSync } from 'node:fs';
import { parse, stringify } from 'yaml';
import type { WireRequest, WireResponse } from '../../src/api/index.js';
import { installClock, VirtualClock } from '../../src/clock.js';
import { loadConfig, resolveKeys } from '../../src/config/index.js';
import { Ledger } from '../../src/ledger/index.js';
import { silentLogger } from '../../src/log.js';
import { runJob, type RunResult } from '../../src/run/runner.js';
import { inProcessResultFetch, inProcessTransport } from '../../src/sim/inprocess.js';
import { SimModel } from '../../src/sim/model.js';
import type { SimOptions } from '../../src/sim/options.js';
import type { TestJob } from '../helpers/job.js';
import { Rng } from '../../src/sim/random.js';

export const KEY = 'steps-test-key-0123456789';

/** One job across runs: the same model, file ledger and virtual clock, as an operator's nights. */
export interface Night {
  readonly job: TestJob;
  readonly model: SimModel;
  readonly ledger: Ledger;
  readonly clock: VirtualClock;
}

export function night(job: TestJob, sim: Partial<Omit<SimOptions, 'keys' | 'resultOrigin'>> = {}): Night {
  return {
    job,
    model: new SimModel({ keys: [KEY], seed: 5, resultOrigin: 'http://results.invalid', processing: 'passthrough', ...sim }),
    ledger: Ledger.open(job.ledgerFile),
    clock: new VirtualClock(Date.UTC(2026, 10, 22, 20, 0, 0)),
  };
}

export interface RunOpts {
  readonly redoSteps?: boolean;
  /** Abort the run (an operator's Ctrl-C) once this many creates have been answered. */
  readonly abortAfterCreates?: number;
  readonly intercept?: (req: WireRequest, forward: () => Promise<WireResponse>) => Promise<WireResponse>;
}

/** The real runner against the in-process model under the virtual clock. */
export async function runNight(n: Night, o: RunOpts = {}): Promise<RunResult> {
  const restore = installClock(n.clock);
  try {
    const config = loadConfig(n.job.jobsFile, { env: {} });
    const keys = resolveKeys(config, { DARKROOM_TEST_KEY: KEY });
    const rng = new Rng(4242, 7919);
    const random = () => rng.uniform();
    const ac = new AbortController();
    let creates = 0;
    const intercept = async (req: WireRequest, forward: () => Promise<WireResponse>): Promise<WireResponse> => {
      const res = o.intercept ? await o.intercept(req, forward) : await forward();
      if (req.url.endsWith('/generate') && o.abortAfterCreates !== undefined && ++creates === o.abortAfterCreates) ac.abort();
      return res;
    };
    let finished = false;
    const p = runJob({
      config,
      baseUrl: 'http://sim.invalid',
      keys,
      ledger: n.ledger,
      log: silentLogger(),
      transport: inProcessTransport(n.model, intercept),
      resultFetch: inProcessResultFetch(n.model),
      random,
      signal: ac.signal,
      graceMs: 0,
      ...(o.redoSteps ? { redoSteps: true } : {}),
    }).finally(() => {
      finished = true;
    });
    await n.clock.run(() => finished, { maxMs: 48 * 3_600_000 });
    return await p;
  } finally {
    restore();
  }
}

/** Rewrite the job file's steps, as an operator editing jobs.yaml between runs. */
export function setSteps(job: TestJob, steps: unknown[]): void {
  const doc = parse(readFileSync(job.jobsFile, 'utf8')) as Record<string, unknown>;
  writeFileSync(job.jobsFile, stringify({ ...doc, steps }));
}

/** Calls the simulator saw from any key, in all. */
export function callsSeen(model: SimModel): number {
  return Object.values(model.audit().keys).reduce((n, k) => n + k.calls, 0);
}
