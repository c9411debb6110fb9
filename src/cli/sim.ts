import { describeFaults, parseFaults } from '../sim/faults.js';
import { startSim, type RunningSim } from '../sim/server.js';

export interface SimArgs {
  readonly port: number;
  readonly resultPort: number;
  readonly seed: number;
  readonly faults: string;
  readonly keys: readonly string[];
  readonly latencyMs: number;
  readonly sigma: number;
  readonly failRate: number;
}

/** `darkroom sim`: the simulator's model served over loopback HTTP until interrupted. */
export async function simCommand(args: SimArgs): Promise<{ sim: RunningSim; banner: string }> {
  const faults = parseFaults(args.faults);
  const sim = await startSim({
    faults,
    port: args.port,
    resultPort: args.resultPort,
    seed: args.seed,
    keys: [...args.keys],
    latency: { medianMs: args.latencyMs, sigma: args.sigma },
    outcomes: { fail: args.failRate },
  });
  const banner = [
    `darkroom sim: API ${sim.apiUrl} · results ${sim.resultUrl} · seed ${args.seed} · faults ${args.faults}`,
    `  valid keys: ${args.keys.join(', ')}  (e.g. export DARKROOM_API_KEY=${args.keys[0]} DARKROOM_BASE_URL=${sim.apiUrl})`,
    `  ${describeFaults(faults)}`,
    `  audit: ${sim.apiUrl}/__sim/audit · stop with Ctrl-C`,
  ].join('\n');
  return { sim, banner };
}
