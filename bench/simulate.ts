/**
 * A workload through the real darkroom runner — scheduler, pipeline, API client, ledger —
 * against the simulator's model in-process, under a virtual clock: hours of service time
 * pass in seconds, and a seed replays a run exactly. The ledger lives in memory (docs/ARCHITECTURE.md
 * § Time and simulation); photos and outputs are real files in a temp folder.
 */
import { accessSync, constants, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { stringify } from 'yaml';
import { installClock, VirtualClock } from '../src/clock.js';
import { loadConfig, resolveKeys } from '../src/config/index.js';
import { Ledger } from '../src/ledger/index.js';
import { silentLogger } from '../src/log.js';
import { runJob } from '../src/run/runner.js';
import { inProcessResultFetch, inProcessTransport } from '../src/sim/inprocess.js';
import { SimModel } from '../src/sim/model.js';
import { Rng } from '../src/sim/random.js';
import { boundOf } from './bound.js';
import { figuresFrom, type RunFigures } from './figures.js';
import { writePhotos } from './photos.js';
import { benchKeys, simOptionsFor, tStarOf, type Workload } from './workloads.js';

export const VIRTUAL_START_MS = Date.UTC(2026, 10, 22, 20, 0, 0);

export interface SimulateOptions {
  readonly seed?: number;
  /** Keep the temp folder (photos, outputs, jobs.yaml) for a look afterwards. */
  readonly keep?: boolean;
}

/** Give up on a run that takes this many times T* (plus two hours) of virtual time: something is stuck. */
const MAX_SLOWDOWN = 6;

export function virtualLimitMs(w: Workload): number {
  return MAX_SLOWDOWN * tStarOf(w).ms + 2 * 3_600_000;
}

/**
 * Photos and outputs go to tmpfs when there is one: the in-memory ledger already skips the
 * fsyncs a real run pays for, and the outputs' fsyncs would otherwise be a fifth of W1's
 * wall-clock time (the virtual clock waits for every file operation to finish).
 */
function scratchRoot(): string {
  try {
    accessSync('/dev/shm', constants.W_OK);
    return '/dev/shm';
  } catch {
    return tmpdir();
  }
}

/** A temp folder holding the workload's photos and a jobs YAML with one key variable per key. */
export function prepareJob(w: Workload): { dir: string; jobsFile: string } {
  const dir = mkdtempSync(path.join(scratchRoot(), `darkroom-bench-${w.name.toLowerCase()}-`));
  writePhotos(path.join(dir, 'photos'), w.photos);
  const jobsFile = path.join(dir, 'jobs.yaml');
  const job = {
    service: { baseUrl: 'http://sim.invalid', keys: benchKeys(w).map((k) => ({ apiKeyEnv: k.env })) },
    input: { dir: './photos' },
    output: { dir: './out' },
    ...(w.limits ? { limits: { callsPerMinute: w.limits.callsPerMinute, callsPerHour: w.limits.callsPerHour } } : {}),
    steps: w.steps.map((capability) => ({ capability })),
    ledger: './state/darkroom.db',
    log: { level: 'silent' },
  };
  writeFileSync(jobsFile, stringify(job));
  return { dir, jobsFile };
}

export async function simulateDarkroom(w: Workload, opts: SimulateOptions = {}): Promise<RunFigures> {
  const seed = opts.seed ?? 1;
  const { dir, jobsFile } = prepareJob(w);
  const vc = new VirtualClock(VIRTUAL_START_MS);
  const restore = installClock(vc);
  const ledger = Ledger.open(':memory:');
  try {
    const model = new SimModel(simOptionsFor(w, seed));
    const config = loadConfig(jobsFile, { env: {} });
    const keys = resolveKeys(config, Object.fromEntries(benchKeys(w).map((k) => [k.env, k.key])));
    // The runner's jitter, seeded: the simulator's generator on a stream of its own.
    const rng = new Rng(seed, 7919);
    const random = () => rng.uniform();

    const wallStart = performance.now();
    const startMs = vc.now();
    let finished = false;
    const run = runJob({
      config,
      baseUrl: 'http://sim.invalid',
      keys,
      ledger,
      log: silentLogger(),
      transport: inProcessTransport(model),
      resultFetch: inProcessResultFetch(model),
      random,
    }).finally(() => {
      finished = true;
    });
    run.catch(() => {}); // a crash is rethrown by `await run` below, once the clock has stopped
    await vc.run(() => finished, { maxMs: virtualLimitMs(w) });
    const result = await run;
    const endMs = vc.now();
    const wallMs = performance.now() - wallStart;
    const s = result.status;
    return figuresFrom(w, 'darkroom', model.audit(), { startMs, endMs, done: s.done, notDone: s.total - s.done, wallMs }, boundOf(w, model, startMs));
  } finally {
    restore();
    ledger.close();
    if (!opts.keep) rmSync(dir, { recursive: true, force: true });
  }
}
