/**
 * `npm run bench:seeds`: issue 16's workloads over several seeds. A 30-photo run is one draw
 * of 30 latencies, and its figures move with the draw by as much as the targets' margins
 * (docs/performance.md § Services unlike the model): the table in `npm run bench` is seed 1, as the issue
 * asks; this shows where a figure sits among its neighbours, and which targets hold on every
 * seed, on most, or on none.
 *
 *   tsx bench/spread.ts [--only short,calls,tight | --only short-heavy] [--seeds N]
 *
 * Runs in this process, one workload and seed at a time (darkroom and both peers).
 */
import { parseArgs } from 'node:util';
import type { RunFigures } from './figures.js';
import { simulateNaive } from './naive.js';
import { simulateDarkroom } from './simulate.js';
import { type SeedFigures, spreadTable } from './spreadTable.js';
import { targetBoundS, targets } from './table16.js';
import { workloadByName, workloadNames } from './workloads.js';

/** The target's name: "wall ≤ 0.90×peer (0.92)" → "wall ≤ 0.90×peer". */
function targetName(line: string): string {
  return line.replace(/^MISS /, '').replace(/ \(.*\)$/, '');
}

async function figuresFor(name: string, seed: number): Promise<SeedFigures> {
  const w = workloadByName(name);
  const ours = await simulateDarkroom(w, { seed });
  // The long workloads' peers take tens of virtual hours each, and their one target needs none.
  const peers =
    w.kind === 'long' ? [] : [await simulateNaive(w, { seed, peer: 'poll2s' }), await simulateNaive(w, { seed, peer: 'wait3s' })];
  const [poll2s = null, wait3s = null]: (RunFigures | null)[] = peers;
  const faster = peers.length > 0 ? Math.min(...peers.map((p) => p.actualS)) : Number.NaN;
  return {
    workload: w.name,
    seed,
    wallS: ours.actualS,
    fasterS: faster,
    drFaster: ours.actualS / faster,
    boundDr: targetBoundS(w, ours) / ours.actualS,
    callsPerPhoto: ours.callsPerPhoto,
    missed: targets(w, { ours, poll2s, wait3s })
      .filter((t) => t.startsWith('MISS'))
      .map(targetName),
  };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { only: { type: 'string', default: 'short,calls,tight' }, seeds: { type: 'string', default: '6' } },
    strict: true,
  });
  const seeds = Number(values.seeds);
  if (!Number.isInteger(seeds) || seeds < 1) throw new Error(`--seeds: expected a whole number ≥ 1, got ${values.seeds}`);
  const names = workloadNames(values.only);
  if (names.some((n) => workloadByName(n).kind === 'W'))
    throw new Error("--only: W1–W4 have their own table in `npm run bench`; this spread is for issue 16's workloads");
  const rows: SeedFigures[] = [];
  for (const name of names) {
    for (let seed = 1; seed <= seeds; seed++) {
      process.stderr.write(`bench:seeds: ${name}, seed ${seed}…\n`);
      rows.push(await figuresFor(name, seed));
    }
  }
  console.log(`The workloads over seeds 1–${seeds} (targets as in \`npm run bench\`, checked per seed):`);
  console.log(spreadTable(rows));
}

// A wrong option is one line, not a stack.
await main().catch((err: unknown) => {
  console.error(`bench:seeds: ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 2;
});
