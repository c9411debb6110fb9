/**
 * Issue 16's table: darkroom on services unlike its model, beside the clairvoyant bound
 * (bound.ts) and the faster of the two naive peers (naive.ts), with each target of the
 * issue checked from the figures.
 */
import { describeShape, isLatencyShape } from '../src/sim/latencyShapes.js';
import { MINUTE_MS } from '../src/spec/window.js';
import { wholeSpans } from './bound.js';
import type { RunFigures } from './figures.js';
import { limitsOf, shapeOf, workloadByName, type Workload } from './workloads.js';

export interface Issue16Result {
  readonly ours: RunFigures;
  readonly poll2s: RunFigures | null;
  readonly wait3s: RunFigures | null;
}

const f = (x: number, d = 2) => x.toFixed(d);

function describeLatency(w: Workload): string {
  if (isLatencyShape(w.latency)) return describeShape(w.latency);
  return w.steps.map((c) => `${c}: ${describeShape(shapeOf(w, c))}`).join('; ');
}

function describeHint(w: Workload): string {
  if (w.waitTimeHint === 'none') return 'no hint';
  const b = w.waitTimeHint.bias ?? 1;
  return b === 1 ? `hint noise σ${w.waitTimeHint.noiseSigma}` : `hint ×${b}, noise σ${w.waitTimeHint.noiseSigma}`;
}

/** Window violations and 429s of a run: none allowed anywhere. */
function violations(w: Workload, o: RunFigures): number {
  const l = limitsOf(w);
  return (o.maxCallsPerMinute > l.callsPerMinute ? 1 : 0) + (o.maxCallsPerHour > l.callsPerHour ? 1 : 0) + (o.maxActive > 3 ? 1 : 0);
}

/** The issue's targets for this workload's kind, each "ok" or what failed. */
export function targets(w: Workload, r: Issue16Result): string[] {
  const o = r.ours;
  const b = o.bound;
  const peers = [r.poll2s, r.wait3s].filter((p): p is RunFigures => p !== null);
  const faster = peers.length > 0 ? Math.min(...peers.map((p) => p.actualS)) : null;
  const out: string[] = [];
  const check = (ok: boolean, what: string) => out.push(`${ok ? 'ok' : 'MISS'} ${what}`);
  check(violations(w, o) === 0 && o.rejected429 === 0, '0 violations, 0 429s');
  const onePhotoStep = w.steps.length === 1;
  if (w.kind === 'short') {
    if (faster !== null) check(o.actualS <= 0.9 * faster, `wall ≤ 0.90×peer (${f(o.actualS / faster)})`);
    if (r.poll2s)
      check(
        o.callsPerPhoto <= r.poll2s.callsPerPhoto,
        `calls/photo ≤ 2 s poller's (${f(o.callsPerPhoto)} vs ${f(r.poll2s.callsPerPhoto)})`,
      );
    check(o.actualS <= b.lag1sS, `bound÷darkroom ≥ 1 s-lag client's (${f(b.boundS / o.actualS)} vs ${f(b.boundS / b.lag1sS)})`);
  } else if (w.kind === 'calls') {
    // Said where the target asks for less time than the bound's calls at the windows' rates
    // take: only a client that bursts whole windows and wastes no poll could reach it (docs/performance.md).
    const under = faster !== null && 0.9 * faster < b.boundS ? `; target ${f(0.9 * faster, 0)} s, under the bound` : '';
    if (faster !== null) check(o.actualS <= 0.9 * faster, `wall ≤ 0.90×peer (${f(o.actualS / faster)}${under})`);
    check(b.boundS / o.actualS >= 0.9, `bound÷darkroom ≥ 0.90 (${f(b.boundS / o.actualS)})`);
    if (onePhotoStep) check(o.callsPerPhoto <= 3.15, `≤ 3.15 calls/photo (${f(o.callsPerPhoto)})`);
  } else if (w.kind === 'long') {
    check(b.boundS / o.actualS >= 0.93, `bound÷darkroom ≥ 0.93 (${f(b.boundS / o.actualS)})`);
  } else if (w.kind === 'tight') {
    // Said where a target asks for less time than the calls the run made beside the work's
    // (the usage read at its start) leave any client: one call past a whole number of
    // windows is one window more.
    const floor = callsFloorS(w, o);
    const under = (targetS: number) =>
      floor !== null && targetS < floor.s ? `; target ${f(targetS, 0)} s, under the ${f(floor.s, 0)} s ${floor.calls} calls need` : '';
    if (faster !== null) check(o.actualS <= 0.92 * faster, `wall ≤ 0.92×peer (${f(o.actualS / faster)}${under(0.92 * faster)})`);
    check(
      b.windowBoundS / o.actualS >= 0.9,
      `window bound÷darkroom ≥ 0.90 (${f(b.windowBoundS / o.actualS)}${under(b.windowBoundS / 0.9)})`,
    );
    check(o.callsPerPhoto <= 3.15, `≤ 3.15 calls/photo (${f(o.callsPerPhoto)})`);
  }
  return out;
}

/**
 * The soonest the run's calls could have ended, the work's and the others, with the minute
 * windows read whole (the (k·limit + 1)-th call a whole k minutes after the first): null
 * when the run made no call beside the work's.
 */
function callsFloorS(w: Workload, o: RunFigures): { s: number; calls: number } | null {
  const b = o.bound;
  if (b.otherCalls <= 0) return null;
  const calls = b.workCalls + b.otherCalls;
  return { s: (wholeSpans(calls, limitsOf(w).callsPerMinute) * MINUTE_MS) / 1000, calls };
}

/** The bound a workload's target reads: the windows read whole for a tight key, else the bound. */
export function targetBoundS(w: Workload, o: RunFigures): number {
  return w.kind === 'tight' ? o.bound.windowBoundS : o.bound.boundS;
}

export function table16(results: readonly Issue16Result[], seed: number): string {
  const head = [
    'workload',
    'photos',
    'darkroom s',
    'calls/photo',
    'lag s',
    'bound s',
    'binds',
    'bound÷dr',
    'bound÷1s-lag',
    'window bound s',
    'wb÷dr',
    'end lag s',
    '2 s poller s',
    'calls/ph',
    'waitTime+3 s s',
    'calls/ph',
    'dr÷faster',
    'max/60s',
    'max/3600s',
    'act',
    '429s',
  ];
  const rows = results.map((r) => {
    const o = r.ours;
    const b = o.bound;
    const peers = [r.poll2s, r.wait3s].filter((p): p is RunFigures => p !== null);
    const faster = peers.length > 0 ? Math.min(...peers.map((p) => p.actualS)) : null;
    const endLag = workloadByName(o.workload).kind === 'long' ? b.lastHourLagS : b.lastMinuteLagS;
    return [
      o.workload,
      String(o.photos),
      f(o.actualS, 0),
      f(o.callsPerPhoto),
      b.meanLagS === null ? '-' : f(b.meanLagS),
      f(b.boundS, 0),
      b.boundBinds,
      f(b.boundS / o.actualS),
      f(b.boundS / b.lag1sS),
      f(b.windowBoundS, 0),
      f(b.windowBoundS / o.actualS),
      endLag === null ? '-' : f(endLag),
      r.poll2s ? f(r.poll2s.actualS, 0) : '-',
      r.poll2s ? f(r.poll2s.callsPerPhoto) : '-',
      r.wait3s ? f(r.wait3s.actualS, 0) : '-',
      r.wait3s ? f(r.wait3s.callsPerPhoto) : '-',
      faster === null ? '-' : f(o.actualS / faster),
      String(o.maxCallsPerMinute),
      String(o.maxCallsPerHour),
      String(o.maxActive),
      String(o.rejected429),
    ];
  });
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    `| ${cells.map((c, i) => (i === 0 || i === 6 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ')} |`;
  const sep = `|${widths.map((w, i) => (i === 0 || i === 6 ? `${'-'.repeat(w + 1)}-` : `${'-'.repeat(w + 1)}:`)).join('|')}|`;
  const out = [`Services unlike the model, and a tight key, seed ${seed}:`, line(head), sep, ...rows.map(line), ''];
  for (const r of results) {
    const w = workloadByName(r.ours.workload);
    const l = limitsOf(w);
    out.push(
      `${w.name} (${w.kind}; ${describeLatency(w)}; ${describeHint(w)}; ${l.callsPerMinute}/min, ${l.callsPerHour}/h): ${targets(w, r).join(' · ')}`,
    );
  }
  return out.join('\n');
}

export const LEGEND16 = [
  "darkroom s, bound s, peers: virtual seconds from the run's start to its end. lag: mean time from a task's end to the first poll that saw it, from the simulator's side.",
  "bound (bench/bound.ts): the run's own tasks in darkroom's order of submission, each into the first free of 3 slots, held for its true latency alone (zero poll lag, calls free of time),",
  "  not before its photo's previous step ended nor before the calls that must precede its create (an upload a photo begun, a create a task before it, and a poll that saw each of the i − 2 tasks that had to end to free one of 3 slots for task i) fit the windows as read below;",
  '  or, where larger ("calls"), the calls the work needs at least — an upload per photo, a create and one poll per task — at the windows\' rates: C ÷ callsPerMinute minutes, and the hour read as T* reads it, (⌈C ÷ callsPerHour⌉ − 1) hours.',
  'bound÷1s-lag: what a client losing exactly 1 s per task would reach, the same schedule with latency + 1 s.',
  'window bound: the same bound with the windows read whole, the c-th call no sooner than (⌈c ÷ limit⌉ − 1) windows after the first (in a rolling window the 21st call of 20 a minute may leave as the first leaves it).',
  "end lag: the mean lag of the tasks that ended in the run's last minute (last hour for the long ones): the lag that is the run's end.",
  "2 s poller: fixed 2 s polls; waitTime+3 s: once at waitTime, then every 3 s; both 600 ms between calls (the spec's 100 a minute; on a 20-a-minute key they meet 429s and wait Retry-After),",
  "  but 3 s apart on tight-key (its key's 20 a minute, as a user told the limit would pace them); no hour awareness. dr÷faster: darkroom's time ÷ the faster peer's.",
  '"best" (ceiling.ts) is given only for W1–W4, where the true distribution is the known lognormal.',
].join('\n');
