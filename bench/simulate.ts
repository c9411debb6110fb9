/**
 * A workload through the real darkroom runner — discovery, scheduler, stages, API client,
 * ledger: `runJob`, as `darkroom run` calls it — against the simulator's model in-process,
 * under a virtual clock, by the tests' own harness (test/helpers/simulate.ts): hours of service
 * time pass in seconds, and a seed replays a run exactly. The ledger lives in memory
 * (docs/ARCHITECTURE.md § Time and simulation); photos and outputs are real files in a temp folder.
 */
import { accessSync, constants, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { stringify } from 'yaml';
import { simulate } from '../test/helpers/simulate.js';
import { boundOf } from './bound.js';
import { figuresFrom, type RunFigures } from './figures.js';
import { writePhotos } from './photos.js';
import { benchKeys, simOptionsFor, tStarOf, type Workload } from './workloads.js';

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
function prepareJob(w: Workload): { dir: string; jobsFile: string } {
  const dir = mkdtempSync(path.join(scratchRoot(), `darkroom-bench-${w.name.toLowerCase()}-`));
  writePhotos(path.join(dir, 'photos'), w.photos);
  const jobsFile = path.join(dir, 'jobs.yaml');
  const job = {
    service: { baseUrl: 'http://sim.invalid', keys: benchKeys(w).map((k) => ({ apiKeyEnv: k.env })) },
    input: { dir: './photos' },
    // The scheduling workloads measure calls and slots in virtual time: ExifTool's real time
    // per output would only lengthen the wall clock. The metadata step has a workload of its own.
    output: { dir: './out', metadata: 'none' },
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
  try {
    const wallStart = performance.now();
    const r = await simulate({
      jobsFile,
      keys: Object.fromEntries(benchKeys(w).map((k) => [k.env, k.key])),
      sim: simOptionsFor(w, seed),
      seed,
      maxMs: virtualLimitMs(w),
    });
    const wallMs = performance.now() - wallStart;
    r.ledger.close();
    const s = r.result.status;
    return figuresFrom(
      w,
      'darkroom',
      r.audit,
      { startMs: r.startMs, endMs: r.endMs, done: s.done, notDone: s.total - s.done, wallMs },
      boundOf(w, r.model, r.startMs, r.endMs),
    );
  } finally {
    if (!opts.keep) rmSync(dir, { recursive: true, force: true });
  }
}
