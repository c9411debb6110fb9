import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { installClock, VirtualClock } from '../../src/clock.js';
import { loadConfig, resolveKeys } from '../../src/config/index.js';
import { Ledger } from '../../src/ledger/index.js';
import { silentLogger } from '../../src/log.js';
import { runJob, type RunResult } from '../../src/run/runner.js';
import { inProcessResultFetch, inProcessTransport } from '../../src/sim/inprocess.js';
import { SimModel } from '../../src/sim/model.js';
import type { SimOptions } from '../../src/sim/options.js';
import { makeJob, type TestJob } from '../helpers/job.js';
import { Rng } from '../../src/sim/random.js';

export const KEY = 'pipeline-test-key-0123456789';

/** A job folder with no photos yet: the test writes the tree it needs. */
export async function emptyJob(steps: unknown[], extra: Record<string, unknown> = {}): Promise<TestJob> {
  return makeJob({ photos: 0, steps, baseUrl: 'http://sim.invalid', extra });
}

export interface Session {
  readonly job: TestJob;
  readonly model: SimModel;
  readonly ledger: Ledger;
  readonly clock: VirtualClock;
  /** Result URLs fetched, in order (downloads are not API calls, so the audit does not see them). */
  readonly fetched: string[];
}

/**
 * The real runner against the in-process model under a virtual clock, like
 * test/helpers/simulate.ts, keeping model, ledger and clock for the next run (a rerun
 * after the tree changed) and counting result downloads.
 */
export function session(job: TestJob, sim: Partial<Omit<SimOptions, 'keys' | 'resultOrigin'>> = {}): Session {
  return {
    job,
    model: new SimModel({ keys: [KEY], seed: 7, resultOrigin: 'http://results.invalid', processing: 'passthrough', ...sim }),
    ledger: Ledger.open(':memory:'),
    clock: new VirtualClock(Date.UTC(2026, 10, 22, 20, 0, 0)),
    fetched: [],
  };
}

export async function run(s: Session): Promise<RunResult> {
  const restore = installClock(s.clock);
  try {
    const config = loadConfig(s.job.jobsFile, { env: {} });
    const keys = resolveKeys(config, { DARKROOM_TEST_KEY: KEY });
    const rng = new Rng(1, 7919);
    const random = () => rng.uniform();
    const fetch = inProcessResultFetch(s.model);
    let finished = false;
    const p = runJob({
      config,
      baseUrl: 'http://sim.invalid',
      keys,
      ledger: s.ledger,
      log: silentLogger(),
      transport: inProcessTransport(s.model),
      resultFetch: (url) => {
        s.fetched.push(url.href);
        return fetch(url);
      },
      random,
    }).finally(() => {
      finished = true;
    });
    await s.clock.run(() => finished, { maxMs: 48 * 3_600_000 });
    return await p;
  } finally {
    restore();
  }
}

/** Every file under a folder, relative, with '/', sorted (temp files of darkroom included, so a leak shows). */
export function filesUnder(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d)) {
      const p = path.join(d, e);
      if (statSync(p).isDirectory()) walk(p);
      else out.push(path.relative(dir, p).split(path.sep).join('/'));
    }
  };
  walk(dir);
  return out.sort();
}
