/**
 * The spread table of `npm run bench:seeds` (spread.ts): issue 16's figures on each seed,
 * their mean, and which targets missed on which seeds.
 */

/** One workload on one seed, as the spread table reads it. */
export interface SeedFigures {
  readonly workload: string;
  readonly seed: number;
  /** darkroom's time from start to end, and the faster peer's (NaN without peers), virtual s. */
  readonly wallS: number;
  readonly fasterS: number;
  /** darkroom's wall ÷ the faster peer's. */
  readonly drFaster: number;
  /** The bound the workload's target reads (table16.ts targetBoundS) ÷ darkroom's wall. */
  readonly boundDr: number;
  readonly callsPerPhoto: number;
  /** The issue's targets (table16.ts) that missed on this seed: their names. */
  readonly missed: readonly string[];
}

/** Long workloads run without peers: no ratio to them. */
const f = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : '-');
const f1 = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : '-');
const mean = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

/** One line per workload, in first-seen order: each seed's figures, their mean, and the misses. */
export function spreadTable(rows: readonly SeedFigures[]): string {
  const by = new Map<string, SeedFigures[]>();
  for (const r of rows) by.set(r.workload, [...(by.get(r.workload) ?? []), r]);
  const out = [
    '| workload | seeds | darkroom s mean | faster peer s mean | dr÷faster by seed | mean | bound÷dr by seed | mean | calls/photo mean | all targets held on | misses (seeds) |',
    '|---|---:|---:|---:|---|---:|---|---:|---:|---:|---|',
  ];
  for (const [name, rs] of by) {
    const misses = new Map<string, number[]>();
    for (const r of rs) for (const m of r.missed) misses.set(m, [...(misses.get(m) ?? []), r.seed]);
    const held = rs.filter((r) => r.missed.length === 0).length;
    out.push(
      `| ${name} | ${rs.map((r) => r.seed).join(',')} | ${f1(mean(rs.map((r) => r.wallS)))} | ${f1(mean(rs.map((r) => r.fasterS)))} | ` +
        `${rs.map((r) => f(r.drFaster)).join(' ')} | ${f(mean(rs.map((r) => r.drFaster)))} | ` +
        `${rs.map((r) => f(r.boundDr)).join(' ')} | ${f(mean(rs.map((r) => r.boundDr)))} | ${f(mean(rs.map((r) => r.callsPerPhoto)))} | ` +
        `${held} of ${rs.length} | ${[...misses].map(([m, s]) => `${m} (${s.join(',')})`).join('; ') || '-'} |`,
    );
  }
  return out.join('\n');
}
