/**
 * `darkroom/sim`: the built-in service simulator for users' own tests (like stripe-mock),
 * served on 127.0.0.1. The same model the CLI's `darkroom sim` serves and darkroom's own
 * tests run against: every endpoint, the per-key call windows and task slots, a seeded
 * task lifecycle, faults by profile (docs/simulator.md).
 *
 * @packageDocumentation
 */
import { describeFaults, parseFaults, type FaultProfileName } from './sim/faults.js';
import type { Audit } from './sim/audit.js';
import { startSim } from './sim/server.js';

/** How {@link startSimulator} serves. Every field may be left out. */
export interface SimulatorOptions {
  /** API port; 0 (default) picks a free one. */
  readonly port?: number | undefined;
  /** Port of the result and upload origin (a second origin, as the real service's CDN); 0 (default) picks a free one. */
  readonly resultPort?: number | undefined;
  /** Same seed, same calls: the same answers. Default 1. */
  readonly seed?: number | undefined;
  /** Injected faults: `none` (default), `flaky` or `hostile` (docs/simulator.md). */
  readonly faults?: SimulatorFaults | undefined;
  /** The API keys it accepts; any other gets 401. Default `['sim-key']`. */
  readonly keys?: readonly string[] | undefined;
  /** Median task latency, ms (lognormal). Default 3000, as `darkroom sim`. */
  readonly latencyMs?: number | undefined;
  /** Spread of the latency's lognormal. Default 0.5. */
  readonly sigma?: number | undefined;
  /** Share of tasks that end FAIL (darkroom creates them again), 0 to 1. Default 0. */
  readonly failRate?: number | undefined;
}

/** The fault profiles: `none`, `flaky`, `hostile`. */
export type SimulatorFaults = FaultProfileName;

/** What the simulator saw, per key and in all (the `GET /__sim/audit` answer). */
export type SimulatorAudit = Audit;

/** A running simulator. */
export interface Simulator {
  /** Its API base URL, for `baseUrl`: `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** The origin its upload and result URLs point at. */
  readonly resultUrl: string;
  /** The keys it accepts. */
  readonly keys: readonly string[];
  /** Tasks created so far (accepted creates, every key). */
  creates(): number;
  /** Calls, windows, creates per source image, key leaks: what it saw so far. */
  audit(): SimulatorAudit;
  /** One line describing its fault profile. */
  readonly faultsLine: string;
  /** Stop listening; answers held back by a fault are dropped. */
  close(): Promise<void>;
}

/** Start the simulator on 127.0.0.1. */
export async function startSimulator(opts: SimulatorOptions = {}): Promise<Simulator> {
  const faults = parseFaults(opts.faults ?? 'none');
  const keys = [...(opts.keys ?? ['sim-key'])];
  const sim = await startSim({
    faults,
    port: opts.port ?? 0,
    resultPort: opts.resultPort ?? 0,
    seed: opts.seed ?? 1,
    keys,
    latency: { medianMs: opts.latencyMs ?? 3000, sigma: opts.sigma ?? 0.5 },
    outcomes: { fail: opts.failRate ?? 0 },
  });
  return {
    url: sim.apiUrl,
    resultUrl: sim.resultUrl,
    keys,
    creates: () => sim.model.audit().tasks,
    audit: () => sim.model.audit(),
    faultsLine: describeFaults(faults),
    close: () => sim.close(),
  };
}
