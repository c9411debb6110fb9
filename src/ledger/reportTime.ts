import type Database from 'better-sqlite3';
import { stmt } from './statements.js';

/** When the work of a report happened: the time spent working (idle gaps left out) and done photos per time bucket. */

/**
 * When the work was really going on: the recorded events (calls and item changes) with every
 * gap longer than `idleGapMs` left out (between runs, a machine asleep, a run stopped).
 */
export interface ReportActivity {
  readonly activeMs: number;
  /** Stretches of activity: one per run, roughly. */
  readonly sessions: number;
  /** Photos that became done in those stretches (distinct items). */
  readonly doneItems: number;
  readonly idleGapMs: number;
}

export interface ReportBucket {
  readonly startMs: number;
  readonly done: number;
}

/**
 * 10 minutes: longer than any pause a working run makes between two recorded events on a
 * busy key (polls every few seconds to a minute, a minute window at most 60 s), shorter than
 * the time between two runs of an evening. A run waiting out its hour window with nothing
 * in flight does look idle: that time is not throughput either.
 */
export const IDLE_GAP_MS = 600_000;

const NICE_BUCKETS_MS = [
  10_000, 30_000, 60_000, 120_000, 300_000, 600_000, 900_000, 1_800_000, 3_600_000, 7_200_000, 10_800_000, 21_600_000, 43_200_000,
  86_400_000,
];

/** The smallest round bucket (10 s … 1 day, 10 min for a usual night) giving at most `maxBuckets` buckets. */
export function chooseBucketMs(spanMs: number, maxBuckets = 60): number {
  for (const b of NICE_BUCKETS_MS) if (Math.floor(spanMs / b) + 1 <= maxBuckets) return b;
  const day = NICE_BUCKETS_MS.at(-1)!;
  return Math.ceil(spanMs / maxBuckets / day) * day;
}

export function readActivity(db: Database.Database, idleGapMs: number): ReportActivity {
  // Each event's gap from the one before; a gap over idleGapMs starts a new stretch.
  const gaps = `SELECT at_ms, item_id, to_state, at_ms - LAG(at_ms) OVER (ORDER BY at_ms) AS gap
                FROM (SELECT at_ms, NULL AS item_id, NULL AS to_state FROM calls
                      UNION ALL SELECT at_ms, item_id, to_state FROM transitions)`;
  const r = stmt<[number, number], { active: number | null; breaks: number | null; events: number; done: number }>(
    db,
    `SELECT SUM(CASE WHEN gap <= ? THEN gap ELSE 0 END) AS active, SUM(gap > ?) AS breaks, COUNT(*) AS events,
            COUNT(DISTINCT CASE WHEN to_state = 'done' THEN item_id END) AS done
     FROM (${gaps})`,
  ).get(idleGapMs, idleGapMs)!;
  return { activeMs: r.active ?? 0, sessions: r.events === 0 ? 0 : (r.breaks ?? 0) + 1, doneItems: r.done, idleGapMs };
}

export function readThroughput(
  db: Database.Database,
  span: { startMs: number; endMs: number } | null,
  maxBuckets: number,
): { bucketMs: number; buckets: ReportBucket[] } {
  if (span === null) return { bucketMs: 600_000, buckets: [] };
  const bucketMs = chooseBucketMs(span.endMs - span.startMs, maxBuckets);
  const origin = Math.floor(span.startMs / bucketMs) * bucketMs;
  const counts = new Map<number, number>();
  for (const r of stmt<[number, number, number], { b: number; n: number }>(
    db,
    "SELECT CAST((at_ms - ?) / ? AS INTEGER) AS b, COUNT(*) AS n FROM transitions WHERE to_state = 'done' AND at_ms >= ? GROUP BY b",
  ).all(origin, bucketMs, origin)) {
    counts.set(r.b, r.n);
  }
  const last = Math.floor((span.endMs - origin) / bucketMs);
  const buckets: ReportBucket[] = [];
  for (let b = 0; b <= last; b++) buckets.push({ startMs: origin + b * bucketMs, done: counts.get(b) ?? 0 });
  return { bucketMs, buckets };
}
