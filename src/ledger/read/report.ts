import type Database from 'better-sqlite3';
import {
  hasOutputMetadata,
  keepsCounts,
  PROBLEM_COLUMNS,
  PROBLEM_STATES,
  readStatus,
  type LedgerStatus,
  type ProblemItem,
} from './status.js';
import type { PhotoFacts } from '../rows.js';
import { hasColumn, hasTable, stmt } from '../statements.js';

/** One finished step of a done item: which capability ran and the task that did it. */
export interface ReportStep {
  readonly step: number;
  readonly capability: string;
  readonly taskId: string;
  /** Tasks created for this step in all (more than 1 when a FAIL was retried). */
  readonly attempts: number;
}

export interface ReportDoneItem {
  readonly id: number;
  readonly path: string;
  readonly srcPath: string;
  readonly outputPath: string | null;
  readonly doneMs: number;
  readonly steps: readonly ReportStep[];
}

/** A problem as `status` lists it, with its source file and the time of its last change. */
export interface ReportProblem extends ProblemItem {
  readonly srcPath: string;
  readonly atMs: number;
}

/** One photo (item) of the archive, whatever its state: the report's table has a row per photo. */
export interface ReportPhoto extends PhotoFacts {
  /** The input's size when discovered. */
  readonly inBytes: number | null;
  /** The output's size as written, from output_files. */
  readonly outBytes: number | null;
  /** Tasks created for it, all steps and attempts. */
  readonly tasks: number;
  /** Its last change. */
  readonly atMs: number;
  /** What its output carries of the input's metadata (FileMetadata's level), null when unknown. */
  readonly meta: string | null;
  /** Why the input's metadata is not on the output, or null. */
  readonly metaNote: string | null;
  /** When the photo was taken and its caption, as carried to the output. */
  readonly metaTaken: string | null;
  readonly metaCaption: string | null;
  /** The input's XMP sidecars read into its output, one a line (null: none). */
  readonly metaSidecars: string | null;
  /** A done photo's decision in review ('accept', 'reject'), about its current output; null: not reviewed (or not done). */
  readonly review: string | null;
  /** A rejection's few words. */
  readonly reviewReason: string | null;
  /** The photo's other names found by the last discovery (the same bytes under another path), one a line; null when none. */
  readonly otherNames: string | null;
}

/** Tasks that ended SUCCESS, by capability: the ones charged (the spec refunds FAIL and ERROR). */
export interface ReportCharged {
  readonly capability: string;
  readonly tasks: number;
}

export interface ReportLatency {
  readonly capability: string;
  /** Tasks that reached SUCCESS. */
  readonly tasks: number;
  /** Mean ms from the accepted create to the poll that saw SUCCESS. */
  readonly meanMs: number;
  readonly minMs: number;
  readonly maxMs: number;
}

export interface ReportData {
  readonly status: LedgerStatus;
  /** Done items, ordered by path, at most `pairLimit` of them; `status.done` says how many there are. */
  readonly done: readonly ReportDoneItem[];
  /** Every photo, ordered by path, at most `photoLimit` of them (`photoCount` says how many there are). */
  readonly photos: readonly ReportPhoto[];
  readonly photoCount: number;
  readonly charged: readonly ReportCharged[];
  readonly activity: ReportActivity;
  /** Failed, held and skipped items (held first), at most `problemLimit`. */
  readonly problems: readonly ReportProblem[];
  readonly problemCount: number;
  readonly calls: {
    readonly total: number;
    readonly byEndpoint: readonly { readonly method: string; readonly endpoint: string; readonly n: number }[];
    readonly byKey: readonly { readonly keyFp: string; readonly n: number }[];
    /** Calls answered 429 (rate limited) and 5xx. */
    readonly limited: number;
    readonly serverErrors: number;
  };
  readonly tasks: {
    readonly created: number;
    readonly polls: number;
    readonly latency: readonly ReportLatency[];
    /** Over every SUCCESS task, all capabilities together; null when none finished. */
    readonly meanLatencyMs: number | null;
  };
  /** First and last recorded event (item state change or call); null on an empty ledger. */
  readonly span: { readonly startMs: number; readonly endMs: number } | null;
  /** First and last time an item became done. */
  readonly doneSpan: { readonly firstMs: number; readonly lastMs: number } | null;
  /** Photos done per bucket, from the first event to the last, empty buckets included. */
  readonly throughput: { readonly bucketMs: number; readonly buckets: readonly ReportBucket[] };
}

export interface ReportOptions {
  readonly pairLimit?: number;
  readonly problemLimit?: number;
  /** Most buckets the throughput chart should have; the bucket size is chosen to fit. */
  readonly maxBuckets?: number;
  /** Photos listed one by one (default 200,000); the counts cover all of them. */
  readonly photoLimit?: number;
  /** A gap between recorded events longer than this is idle time (default 10 min). */
  readonly idleGapMs?: number;
}

/** Everything `darkroom report` shows, read from the ledger alone (safe beside a running `run`). */
export function readReport(db: Database.Database, now: number, opts: ReportOptions = {}): ReportData {
  const pairLimit = opts.pairLimit ?? 500;
  const photoLimit = opts.photoLimit ?? 200_000;
  const idleGapMs = opts.idleGapMs ?? IDLE_GAP_MS;
  const problemLimit = opts.problemLimit ?? 2000;
  return db.transaction(() => {
    const status = readStatus(db, now, 0);
    const done = readDone(db, pairLimit);

    const problems = stmt<[number], ReportProblem>(
      db,
      `SELECT ${PROBLEM_COLUMNS}, i.src_path AS srcPath, i.updated_ms AS atMs
       FROM items i WHERE i.state IN ${PROBLEM_STATES}
       ORDER BY CASE i.state WHEN 'held' THEN 0 WHEN 'failed' THEN 1 ELSE 2 END, i.rel_path
       LIMIT ?`,
    ).all(problemLimit);
    const problemCount = status.held + status.failed + status.skipped;

    const { byEndpoint, byKey, errs } = readCallFigures(db);

    const taskTotals = stmt<[], { created: number; polls: number | null }>(
      db,
      'SELECT COUNT(*) AS created, SUM(polls) AS polls FROM attempts',
    ).get()!;
    const latency = stmt<[], ReportLatency>(
      db,
      `SELECT capability, COUNT(*) AS tasks, AVG(ended_ms - started_ms) AS meanMs,
              MIN(ended_ms - started_ms) AS minMs, MAX(ended_ms - started_ms) AS maxMs
       FROM attempts WHERE status = 'SUCCESS' AND ended_ms IS NOT NULL
       GROUP BY capability ORDER BY capability`,
    ).all();
    const overall = stmt<[], { m: number | null }>(
      db,
      "SELECT AVG(ended_ms - started_ms) AS m FROM attempts WHERE status = 'SUCCESS' AND ended_ms IS NOT NULL",
    ).get()!;

    const spanRow = stmt<[], { s: number | null; e: number | null }>(
      db,
      `SELECT MIN(s) AS s, MAX(e) AS e FROM (
         SELECT MIN(at_ms) AS s, MAX(at_ms) AS e FROM transitions
         UNION ALL SELECT MIN(at_ms), MAX(at_ms) FROM calls)`,
    ).get()!;
    const span = spanRow.s === null || spanRow.e === null ? null : { startMs: spanRow.s, endMs: spanRow.e };
    const doneRow = stmt<[], { f: number | null; l: number | null }>(
      db,
      "SELECT MIN(at_ms) AS f, MAX(at_ms) AS l FROM transitions WHERE to_state = 'done'",
    ).get()!;
    const doneSpan = doneRow.f === null || doneRow.l === null ? null : { firstMs: doneRow.f, lastMs: doneRow.l };

    const throughput = readThroughput(db, span, opts.maxBuckets ?? 60);
    const photos = readReportPhotos(db, null, photoLimit);
    const photoCount = Object.values(status.states).reduce((a, b) => a + b, 0);
    const charged = stmt<[], ReportCharged>(
      db,
      "SELECT capability, COUNT(*) AS tasks FROM attempts WHERE status = 'SUCCESS' GROUP BY capability ORDER BY capability",
    ).all();
    const activity = readActivity(db, idleGapMs);

    return {
      status,
      done,
      problems,
      problemCount,
      calls: { total: status.calls.total, byEndpoint, byKey, limited: errs.limited ?? 0, serverErrors: errs.server ?? 0 },
      tasks: { created: taskTotals.created, polls: taskTotals.polls ?? 0, latency, meanLatencyMs: overall.m },
      span,
      doneSpan,
      throughput,
      photos,
      photoCount,
      charged,
      activity,
    };
  })();
}

/**
 * Photos in path order after `after` (null: from the first), at most `limit` (the report's
 * pages), each with what its row shows: its output's size and metadata, its tasks, its other
 * names, and the decision that stands about its output.
 */
export function readReportPhotos(db: Database.Database, after: string | null, limit: number): ReportPhoto[] {
  if (limit <= 0) return [];
  const sidecars = hasColumn(db, 'output_files', 'meta_sidecars') ? 'o.meta_sidecars' : 'NULL';
  const meta = hasOutputMetadata(db)
    ? `o.meta AS meta, o.meta_note AS metaNote, o.meta_taken AS metaTaken, o.meta_caption AS metaCaption, ${sidecars} AS metaSidecars`
    : 'NULL AS meta, NULL AS metaNote, NULL AS metaTaken, NULL AS metaCaption, NULL AS metaSidecars';
  const reviews = hasTable(db, 'reviews');
  // The decision that stands (reviews.ts STANDING): about the done photo's output as it is now.
  const decision = reviews
    ? `r.decision AS review, r.reason AS reviewReason FROM items i LEFT JOIN output_files o ON o.path = i.output_path
       LEFT JOIN reviews r ON r.item_id = i.id AND i.state = 'done' AND r.output_sha256 IS o.sha256`
    : 'NULL AS review, NULL AS reviewReason FROM items i LEFT JOIN output_files o ON o.path = i.output_path';
  return stmt<[string, number], ReportPhoto>(
    db,
    `SELECT i.id, i.rel_path AS path, i.src_path AS srcPath, i.state, i.step_index AS step, i.reason,
            i.size_bytes AS inBytes, i.output_path AS outputPath, i.updated_ms AS atMs,
            o.bytes AS outBytes, ${meta},
            (SELECT COUNT(*) FROM attempts a WHERE a.item_id = i.id) AS tasks,
            (SELECT GROUP_CONCAT(n.name, char(10)) FROM inputs n WHERE n.item_id = i.id AND n.name <> i.rel_path
               AND n.seen_gen >= (SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'inputs.generation')) AS otherNames,
            ${decision}
     WHERE i.rel_path > ? ORDER BY i.rel_path LIMIT ?`,
  ).all(after ?? '', limit);
}

/** Calls by endpoint and by key, and those refused (429) or failed at the service (5xx): from the ledger's counts when it keeps them. */
function readCallFigures(db: Database.Database): {
  byEndpoint: { method: string; endpoint: string; n: number }[];
  byKey: { keyFp: string; n: number }[];
  errs: { limited: number | null; server: number | null };
} {
  const from = keepsCounts(db) ? 'call_counts' : null;
  const byEndpoint = stmt<[], { method: string; endpoint: string; n: number }>(
    db,
    from
      ? `SELECT method, endpoint, SUM(n) AS n FROM ${from} GROUP BY method, endpoint ORDER BY n DESC, endpoint`
      : 'SELECT method, endpoint, COUNT(*) AS n FROM calls GROUP BY method, endpoint ORDER BY n DESC, endpoint',
  ).all();
  const byKey = stmt<[], { keyFp: string; n: number }>(
    db,
    from
      ? `SELECT key_fp AS keyFp, SUM(n) AS n FROM ${from} GROUP BY key_fp ORDER BY key_fp`
      : 'SELECT key_fp AS keyFp, COUNT(*) AS n FROM calls GROUP BY key_fp ORDER BY key_fp',
  ).all();
  const errs = stmt<[], { limited: number | null; server: number | null }>(
    db,
    from
      ? `SELECT SUM(limited) AS limited, SUM(server_errors) AS server FROM ${from}`
      : 'SELECT SUM(http_status = 429) AS limited, SUM(http_status >= 500) AS server FROM calls',
  ).get()!;
  return { byEndpoint, byKey, errs };
}

function readDone(db: Database.Database, limit: number): ReportDoneItem[] {
  const rows = stmt<
    [number],
    { id: number; path: string; srcPath: string; outputPath: string | null; doneMs: number | null; updated: number }
  >(
    db,
    `SELECT i.id, i.rel_path AS path, i.src_path AS srcPath, i.output_path AS outputPath, i.updated_ms AS updated,
            (SELECT MAX(t.at_ms) FROM transitions t WHERE t.item_id = i.id AND t.to_state = 'done') AS doneMs
     FROM items i WHERE i.state = 'done' ORDER BY i.rel_path LIMIT ?`,
  ).all(limit);
  if (rows.length === 0) return [];
  const attempts = stmt<[number], { item_id: number; step_index: number; capability: string; task_id: string; status: string }>(
    db,
    `SELECT a.item_id, a.step_index, a.capability, a.task_id, a.status FROM attempts a
     WHERE a.item_id IN (SELECT id FROM items WHERE state = 'done' ORDER BY rel_path LIMIT ?)
     ORDER BY a.item_id, a.step_index, a.id`,
  ).all(limit);
  const byItem = new Map<number, Map<number, { capability: string; taskId: string; attempts: number; ok: boolean }>>();
  for (const a of attempts) {
    let steps = byItem.get(a.item_id);
    if (!steps) byItem.set(a.item_id, (steps = new Map()));
    const s = steps.get(a.step_index);
    if (!s) {
      steps.set(a.step_index, { capability: a.capability, taskId: a.task_id, attempts: 1, ok: a.status === 'SUCCESS' });
    } else {
      s.attempts++;
      // The task that succeeded is the one to show; otherwise the latest.
      if (a.status === 'SUCCESS' || !s.ok) {
        s.taskId = a.task_id;
        s.ok = a.status === 'SUCCESS';
      }
    }
  }
  return rows.map((r) => ({
    id: r.id,
    path: r.path,
    srcPath: r.srcPath,
    outputPath: r.outputPath,
    doneMs: r.doneMs ?? r.updated,
    steps: [...(byItem.get(r.id)?.entries() ?? [])]
      .sort(([a], [b]) => a - b)
      .map(([step, s]) => ({ step, capability: s.capability, taskId: s.taskId, attempts: s.attempts })),
  }));
}

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

function readActivity(db: Database.Database, idleGapMs: number): ReportActivity {
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

function readThroughput(
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
