import { startSimulator, type Simulator, type SimulatorFaults } from '../simulator.js';

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

/** `darkroom sim`: the simulator's model served over loopback HTTP until interrupted (the `darkroom/sim` entry). */
export async function simCommand(args: SimArgs): Promise<{ sim: Simulator; banner: string }> {
  const sim = await startSimulator({
    faults: args.faults as SimulatorFaults,
    port: args.port,
    resultPort: args.resultPort,
    seed: args.seed,
    keys: args.keys,
    latencyMs: args.latencyMs,
    sigma: args.sigma,
    failRate: args.failRate,
  });
  const banner = [
    `darkroom sim: API ${sim.url} · results ${sim.resultUrl} · seed ${args.seed} · faults ${args.faults}`,
    `  valid keys: ${args.keys.join(', ')}  (e.g. export DARKROOM_API_KEY=${args.keys[0]} DARKROOM_BASE_URL=${sim.url})`,
    `  ${sim.faultsLine}`,
    `  audit: ${sim.url}/__sim/audit · stop with Ctrl-C`,
  ].join('\n');
  return { sim, banner };
}
