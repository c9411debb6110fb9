/**
 * `npm run bench`: the workloads through darkroom and through the naive peers, then the two
 * ledger measurements. Prints issue 3's table (W1–W4), issue 16's (services unlike the
 * model), then one JSON line per workload.
 *
 *   tsx bench/run.ts [--only W1,short-uniform | --only short] [--quick | --scale F] [--seed N] [--no-naive] [--no-ledger | --only-ledger] [--no-metadata] [--inline]
 *
 * `--only` takes workload names or kinds (W, short, calls, long); `--only-ledger` skips the
 * workloads and runs the two ledger measurements alone.
 *
 * Each workload runs in a child process of its own, so that its wall-clock time and peak
 * RSS are its own; `--inline` runs them all in this process (for `node --cpu-prof`).
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { ceilingOf, type Ceiling } from './ceiling.js';
import type { RunFigures } from './figures.js';
import { measureDiscover, measureStatus } from './ledger.js';
import { formatMetadataBench, measureMetadata } from './metadata.js';
import { simulateNaive } from './naive.js';
import { simulateDarkroom } from './simulate.js';
import { LEGEND16, table16 } from './table16.js';
import { variant, workloadByName, workloadNames, WORKLOADS, type Workload } from './workloads.js';

const RESULT_TAG = 'DARKROOM_BENCH_RESULT ';

export interface WorkloadResult {
  readonly kind: Workload['kind'];
  readonly ours: RunFigures;
  /** Issue 3's naive client (3 s polls): W1–W4 only. */
  readonly naive: RunFigures | null;
  /** Issue 16's naive peers: every other workload. */
  readonly poll2s: RunFigures | null;
  readonly wait3s: RunFigures | null;
  /** Only where the true distribution is the lognormal ceiling.ts assumes known. */
  readonly ceiling: Ceiling | null;
}

export interface WorkloadFailure {
  readonly workload: string;
  readonly error: string;
}

export type Outcome = WorkloadResult | WorkloadFailure;

const { values } = parseArgs({
  options: {
    only: { type: 'string' },
    quick: { type: 'boolean', default: false },
    scale: { type: 'string' },
    seed: { type: 'string', default: '1' },
    'no-naive': { type: 'boolean', default: false },
    'no-ledger': { type: 'boolean', default: false },
    'only-ledger': { type: 'boolean', default: false },
    'no-metadata': { type: 'boolean', default: false },
    inline: { type: 'boolean', default: false },
    child: { type: 'string' },
  },
  strict: true,
});

const seed = Number(values.seed);
const scale = values.scale === undefined ? undefined : Number(values.scale);
if (!Number.isInteger(seed)) throw new Error(`--seed: expected an integer, got ${values.seed}`);
if (scale !== undefined && !(scale > 0)) throw new Error(`--scale: expected a number > 0, got ${values.scale}`);

async function runWorkload(name: string): Promise<WorkloadResult> {
  const w = variant(workloadByName(name), { quick: values.quick, scale });
  const ours = await simulateDarkroom(w, { seed });
  const peers = !values['no-naive'];
  const legacy = w.kind === 'W';
  return {
    kind: w.kind,
    ours,
    naive: peers && legacy ? await simulateNaive(w, { seed }) : null,
    poll2s: peers && !legacy ? await simulateNaive(w, { seed, peer: 'poll2s' }) : null,
    wait3s: peers && !legacy ? await simulateNaive(w, { seed, peer: 'wait3s' }) : null,
    ceiling: ceilingOf(w, seed),
  };
}

/** The same script, same loader flags, one workload: its figures come back as one tagged line. */
function runInChild(name: string): Outcome {
  const passOn = process.argv.slice(2).filter((a, i, all) => a !== '--only' && all[i - 1] !== '--only' && !a.startsWith('--only='));
  const r = spawnSync(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), ...passOn, '--no-ledger', '--child', name], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 64 * 1024 * 1024,
  });
  const line = r.stdout.split('\n').find((l) => l.startsWith(RESULT_TAG));
  if (r.status !== 0 || !line) return { workload: name, error: `exit ${r.status ?? r.signal}; its error is printed above` };
  return JSON.parse(line.slice(RESULT_TAG.length)) as WorkloadResult;
}

async function runHere(name: string): Promise<Outcome> {
  try {
    return await runWorkload(name);
  } catch (err) {
    console.error(err);
    return { workload: name, error: String((err as Error).message ?? err) };
  }
}

const fmt = (x: number, digits = 2) => x.toFixed(digits);

/** A peer's figures in the JSON lines. */
function peerLine(p: RunFigures) {
  return {
    actualS: p.actualS,
    callsPerPhoto: p.callsPerPhoto,
    meanLagS: p.bound.meanLagS,
    lastMinuteLagS: p.bound.lastMinuteLagS,
    rejected429: p.rejected429,
  };
}

function table(outcomes: readonly WorkloadResult[]): string {
  const head = [
    'workload',
    'photos',
    'keys',
    'T* h',
    'binds',
    'actual h',
    'eff',
    'best eff',
    'naive eff',
    'calls/photo',
    'lag s',
    'last-hour lag s',
    'last-min lag s',
    'max/60s',
    'max/3600s',
    'max active',
    '429s',
    'wall s',
    'RSS MB',
  ];
  const rows = outcomes.map((r) => {
    const { ours: o, naive: n, ceiling: c } = r;
    return [
      o.workload,
      String(o.photos),
      String(o.keys),
      fmt(o.tStarH),
      o.binds,
      fmt(o.actualH),
      fmt(o.efficiency),
      c ? fmt(c.efficiency) : '-',
      n ? fmt(n.efficiency) : '-',
      fmt(o.callsPerPhoto),
      o.bound.meanLagS === null ? '-' : fmt(o.bound.meanLagS),
      o.bound.lastHourLagS === null ? '-' : fmt(o.bound.lastHourLagS),
      o.bound.lastMinuteLagS === null ? '-' : fmt(o.bound.lastMinuteLagS),
      String(o.maxCallsPerMinute),
      String(o.maxCallsPerHour),
      String(o.maxActive),
      String(o.rejected429),
      fmt(o.wallS, 1),
      fmt(o.peakRssMb, 0),
    ];
  });
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    `| ${cells.map((c, i) => (i === 0 || i === 4 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ')} |`;
  return [
    line(head),
    `|${widths.map((w, i) => (i === 0 || i === 4 ? `${'-'.repeat(w + 1)}-` : `${'-'.repeat(w + 1)}:`)).join('|')}|`,
    ...rows.map(line),
  ].join('\n');
}

async function main(): Promise<void> {
  if (values.child !== undefined) {
    process.stdout.write(`${RESULT_TAG}${JSON.stringify(await runWorkload(values.child))}\n`);
    return;
  }
  if (values['only-ledger'] && values['no-ledger']) throw new Error('--only-ledger and --no-ledger: expected at most one');
  const names = values['only-ledger'] ? [] : values.only ? workloadNames(values.only) : WORKLOADS.map((w) => w.name);
  const results: Outcome[] = [];
  for (const name of names) {
    process.stderr.write(`bench: ${name}${values.quick ? ' (quick)' : scale ? ` (scale ${scale})` : ''}…\n`);
    results.push(values.inline ? await runHere(name) : runInChild(name));
  }

  const ok = results.filter((r): r is WorkloadResult => !('error' in r));
  const issue3 = ok.filter((r) => r.kind === 'W');
  const issue16 = ok.filter((r) => r.kind !== 'W');
  if (issue3.length > 0) {
    console.log(table(issue3));
    console.log('eff = T* / actual (virtual time); naive = fixed 3 s polls, 600 ms between calls, no hour awareness.');
    console.log(
      'best eff = the best any client could do on the same tasks: exact latency model, optimal polls, no overheads (bench/ceiling.ts).',
    );
    console.log(
      "lag: mean time from a task's end to the first poll that saw it; last-hour lag, last-min lag: the same of the tasks that ended in the run's last hour, last minute.",
    );
    console.log("max/60s, max/3600s, max active: the most over keys, from the simulator's audit (limits 100, 1000, 3).");
  }
  if (issue16.length > 0) {
    if (issue3.length > 0) console.log('');
    console.log(table16(issue16, seed));
    console.log(LEGEND16);
  }
  for (const r of results) if ('error' in r) console.log(`${r.workload} FAILED: ${r.error}`);

  let ledger: Record<string, unknown> | undefined;
  if (!values['no-ledger']) {
    process.stderr.write('bench: ledger of 100,000 items…\n');
    const status = await measureStatus();
    const disc = await measureDiscover();
    ledger = { status, discover: disc };
    console.log('');
    console.log(
      `status on ${status.items.toLocaleString('en')} items, ${status.calls.toLocaleString('en')} calls: ` +
        `${fmt(status.inProcessS, 3)} s in-process, ${status.cliS === null ? '-' : fmt(status.cliS, 3)} s as \`darkroom status --json\` (target < 0.5 s)` +
        (status.cliNote ? ` [${status.cliNote}]` : ''),
    );
    console.log(
      `discover + record ${disc.files.toLocaleString('en')} files: ${fmt(disc.totalS, 1)} s ` +
        `(discover ${fmt(disc.discoverS, 1)} s, record ${fmt(disc.recordS, 1)} s; target < 60 s)`,
    );
  }

  console.log('');
  for (const r of results) {
    console.log(
      JSON.stringify(
        'error' in r
          ? r
          : {
              ...r.ours,
              bestEfficiency: r.ceiling?.efficiency ?? null,
              bestCallsPerPhoto: r.ceiling?.callsPerPhoto ?? null,
              naiveEfficiency: r.naive?.efficiency ?? null,
              naiveCallsPerPhoto: r.naive?.callsPerPhoto ?? null,
              poll2s: r.poll2s ? peerLine(r.poll2s) : null,
              wait3s: r.wait3s ? peerLine(r.wait3s) : null,
            },
      ),
    );
  }
  if (ledger) console.log(JSON.stringify({ ledger }));

  // The metadata step on a fast service, in real time (bench/metadata.ts).
  if (!values['no-metadata'] && !values['only-ledger'] && values.only === undefined) {
    process.stderr.write('bench: the metadata step (real time, about two minutes)…\n');
    const m = await measureMetadata({ photos: values.quick ? 60 : 200 });
    console.log('');
    console.log(formatMetadataBench(m));
    console.log(JSON.stringify({ metadata: m }));
  }
  if (results.some((r) => 'error' in r)) process.exitCode = 1;
}

await main();
