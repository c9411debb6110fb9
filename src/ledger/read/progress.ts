import type Database from 'better-sqlite3';
import { readFollow, type FollowState } from '../follow.js';
import { readVerdict } from '../inputs.js';
import { holderFromRow, judgeHolder, SELECT_HOLDER, systemProbe, type LockRow } from '../lock.js';
import type { LockHolder } from '../../errors.js';
import { openDatabase } from '../open.js';
import { hasTable, stmt } from '../statements.js';
import { readStepsCensus, redoCondition, type StepsCensus } from './census.js';
import { keepsCounts, readCallsByKey, readKeys, readStatus, readStepCapabilities, type LedgerStatus, type StepGroup } from './status.js';
import { inPhase, sqlList, type ItemState } from '../transitions.js';

/**
 * Read-only figures for the live progress display, `darkroom status` and `darkroom plan`:
 * everything beyond `readStatus` that an operator watches while a run goes on. Each is one
 * grouped query; on a ledger of 100,000 items the whole set reads in tens of milliseconds,
 * so the display can ask once a second.
 */
export interface ProgressFacts {
  readonly status: LedgerStatus;
  /** Items per (current step index, state). */
  readonly byStep: readonly StepGroup[];
  /** Task slots in use per key: `active` tasks and creates in flight (`submitting`). */
  readonly slots: Readonly<Record<string, { readonly active: number; readonly submitting: number }>>;
  /** All calls ever, by kind: uploads, task calls (creates and polls) and account calls (credits, usage). */
  readonly callsByKind: { readonly upload: number; readonly task: number; readonly account: number };
  /** Photos that became done, and calls made, since `sinceMs`; the first call since then (null if none). */
  readonly recent: { readonly sinceMs: number; readonly done: number; readonly calls: number; readonly firstCallMs: number | null };
  /** Mean task latency per capability over the tasks that reached SUCCESS (the midpoint of the poll interval that saw it end). */
  readonly latency: readonly { readonly capability: string; readonly tasks: number; readonly meanMs: number }[];
  /** Mean `waitTime` hint of the creates so far, per capability (a prior before any task has ended). */
  readonly waitHints: readonly { readonly capability: string; readonly meanMs: number }[];
  /** The capability each step index ran as, from the ledger's own submissions. */
  readonly stepCapabilities: readonly { readonly step: number; readonly capability: string }[];
  /** Tasks that ended FAIL and were created again (each cost a create and its polls). */
  readonly failRetries: number;
}

export interface ProgressOptions {
  /** Start of the "recent" window for throughput; default 15 minutes before `now`. */
  readonly sinceMs?: number;
  /** Problem items listed in `status.problems`; default 200. */
  readonly problemLimit?: number;
  /** Steps of the job, when known (done photos are on the last one). */
  readonly stepCount?: number;
}

export const RECENT_WINDOW_MS = 15 * 60_000;

/**
 * What a long-lived reader keeps between reads so that each read costs little on a big
 * ledger. A ledger that keeps its own counts (migrations/013_ledger_counts.sql, and 015 for
 * the review decisions that stand) is read from them: a refresh of `status --watch` reads a
 * few rows per state, key and capability, the problems listed, and what happened since the
 * last one, whatever the size of the archive. On an older ledger, calls are append-only
 * (rowid order), so their counts by kind are kept up to date from the rows added since the
 * last read; figures over the attempts and submissions tables change slowly and are re-read
 * at most every 30 s.
 *
 * Measured on the bench's 100,000-item, 130,000-call ledger: a full read 243 ms (a scan of
 * items by step and of calls by endpoint, ~40 ms each, dominated); a cached one ~25 ms.
 * With the indexes of migration 004 (items by state and step, calls by endpoint): a full
 * read ~30 ms, a cached one ~20 ms.
 */
export interface ProgressCache {
  lastCallId: number;
  upload: number;
  account: number;
  calls: number;
  slowAtMs: number;
  slow?: Pick<ProgressFacts, 'latency' | 'waitHints' | 'stepCapabilities' | 'failRetries'>;
}

const SLOW_EVERY_MS = 30_000;

/**
 * States whose items can be on any step; the others have a fixed one (before the upload and
 * skipped: the first; done: the last), counted from the state counts; gone ones are no input.
 */
const FIRST_STEP = inPhase('upload', 'skipped');
const ANY_STEP = inPhase('create', 'running', 'paid', 'held', 'failed');

/** Every figure of ProgressFacts, read in one transaction (a consistent picture beside a running `run`). */
export function readProgress(db: Database.Database, now: number, opts: ProgressOptions = {}, cache?: ProgressCache): ProgressFacts {
  const sinceMs = opts.sinceMs ?? now - RECENT_WINDOW_MS;
  const c: ProgressCache = cache ?? { lastCallId: 0, upload: 0, account: 0, calls: 0, slowAtMs: -Infinity };
  return db.transaction(() => {
    const status = readStatus(db, now, opts.problemLimit ?? 200);
    const counted = keepsCounts(db);
    const callsByKind = counted ? readCallKinds(db) : callKindsSince(db, c, status.calls.total);
    if (counted) c.slow = readSlow(db, true);
    else if (!c.slow || now - c.slowAtMs >= SLOW_EVERY_MS || now < c.slowAtMs) {
      c.slow = readSlow(db, false);
      c.slowAtMs = now;
    }
    const slow = c.slow;

    // Items by (step, state): through the state index for the states that can be on any
    // step, from the state counts for the others.
    const byStep: StepGroup[] = stmt<[], StepGroup>(
      db,
      counted
        ? `SELECT step_index AS step, state, n FROM item_counts WHERE state IN ${sqlList(ANY_STEP)} AND n > 0 ORDER BY step_index, state`
        : `SELECT step_index AS step, state, COUNT(*) AS n FROM items
           WHERE state IN ${sqlList(ANY_STEP)} GROUP BY step_index, state ORDER BY step_index, state`,
    ).all();
    const seen = Math.max(0, ...byStep.map((r) => r.step + 1), ...slow.stepCapabilities.map((r) => r.step + 1));
    const last = Math.max(0, (opts.stepCount ?? Math.max(1, seen)) - 1);
    for (const state of FIRST_STEP) {
      if (status.states[state] > 0) byStep.push({ step: 0, state, n: status.states[state] });
    }
    if (status.states.done > 0) byStep.push({ step: last, state: 'done', n: status.states.done });

    const slots: Record<string, { active: number; submitting: number }> = {};
    for (const r of stmt<[], { key_fp: string; active: number; submitting: number }>(
      db,
      `SELECT key_fp, SUM(state = 'active') AS active, SUM(state = 'submitting') AS submitting
       FROM items WHERE state IN ('active', 'submitting') AND key_fp IS NOT NULL GROUP BY key_fp ORDER BY key_fp`,
    ).all()) {
      slots[r.key_fp] = { active: r.active, submitting: r.submitting };
    }

    const done = stmt<[number], { n: number }>(db, "SELECT COUNT(*) AS n FROM transitions WHERE to_state = 'done' AND at_ms > ?").get(
      sinceMs,
    )!.n;
    // Per key, through the (key_fp, at_ms) index: the keys with calls in the last hour are
    // the only ones that can have calls in the (shorter) recent window.
    const recentCalls = { n: 0, first: null as number | null };
    const keysInHour = Object.keys(status.calls.perKey);
    const windowKeys = sinceMs >= now - 3_600_000 ? keysInHour : readKeys(db, counted);
    for (const key of windowKeys) {
      const r = stmt<[string, number], { n: number; first: number | null }>(
        db,
        'SELECT COUNT(*) AS n, MIN(at_ms) AS first FROM calls WHERE key_fp = ? AND at_ms > ?',
      ).get(key, sinceMs)!;
      recentCalls.n += r.n;
      if (r.first !== null && (recentCalls.first === null || r.first < recentCalls.first)) recentCalls.first = r.first;
    }

    return {
      status,
      byStep,
      slots,
      callsByKind,
      recent: { sinceMs, done, calls: recentCalls.n, firstCallMs: recentCalls.first },
      ...slow,
    };
  })();
}

const UPLOAD = "'/api/v1/image/upload'";
const ACCOUNT = "('/api/v1/credits', '/api/v1/usage')";

/** All calls ever, by kind, from the ledger's own counts (migrations/013_ledger_counts.sql). */
function readCallKinds(db: Database.Database): ProgressFacts['callsByKind'] {
  const r = stmt<[], { upload: number | null; account: number | null; all: number | null }>(
    db,
    `SELECT SUM(CASE WHEN endpoint = ${UPLOAD} THEN n END) AS upload, SUM(CASE WHEN endpoint IN ${ACCOUNT} THEN n END) AS account,
            SUM(n) AS "all" FROM call_counts`,
  ).get()!;
  const upload = r.upload ?? 0;
  const account = r.account ?? 0;
  return { upload, account, task: (r.all ?? 0) - upload - account };
}

/**
 * All calls ever, by kind, on a ledger without its own counts: the counts kept in `c` brought up
 * to date from the calls added since the last read (calls are append-only, rowid order).
 */
function callKindsSince(db: Database.Database, c: ProgressCache, total: number): ProgressFacts['callsByKind'] {
  // By the calls_endpoint index (migration 004), and on a first read the count of the whole
  // table that status has made (COUNT(*), which SQLite answers from page counts: ~3 ms on
  // 130,000 calls, where one pass over the rows after lastCallId took ~50 ms).
  const since = c.lastCallId;
  const kinds = stmt<[number, number], { upload: number; account: number; last: number | null }>(
    db,
    `SELECT (SELECT COUNT(*) FROM calls WHERE endpoint = ${UPLOAD} AND id > ?) AS upload,
            (SELECT COUNT(*) FROM calls WHERE endpoint IN ${ACCOUNT} AND id > ?) AS account,
            (SELECT MAX(id) FROM calls) AS last`,
  ).get(since, since)!;
  const n = since === 0 ? total : stmt<[number], { n: number }>(db, 'SELECT COUNT(*) AS n FROM calls WHERE id > ?').get(since)!.n;
  c.upload += kinds.upload;
  c.account += kinds.account;
  c.calls += n;
  c.lastCallId = kinds.last ?? c.lastCallId;
  return { upload: c.upload, account: c.account, task: c.calls - c.upload - c.account };
}

function readSlow(
  db: Database.Database,
  counted: boolean,
): Pick<ProgressFacts, 'latency' | 'waitHints' | 'stepCapabilities' | 'failRetries'> {
  const stepCapabilities = readStepCapabilities(db, counted);
  if (counted) {
    // The sums the ledger keeps (migrations/013_ledger_counts.sql): the same figures as the
    // averages below, without reading a row per task.
    const latency = stmt<[], { capability: string; tasks: number; meanMs: number }>(
      db,
      'SELECT capability, succeeded AS tasks, latency_sum / succeeded AS meanMs FROM attempt_counts WHERE succeeded > 0 ORDER BY capability',
    ).all();
    const waitHints = stmt<[], { capability: string; meanMs: number }>(
      db,
      'SELECT capability, hint_sum / hinted AS meanMs FROM attempt_counts WHERE hinted > 0 ORDER BY capability',
    ).all();
    const failRetries = stmt<[], { n: number | null }>(db, 'SELECT SUM(failed) AS n FROM attempt_counts').get()!.n ?? 0;
    return { latency, waitHints, stepCapabilities, failRetries };
  }
  const latency = stmt<[], { capability: string; tasks: number; meanMs: number }>(
    db,
    `SELECT capability, COUNT(*) AS tasks,
            AVG(((COALESCE(last_running_ms, started_ms) - started_ms) + (ended_ms - started_ms)) / 2.0) AS meanMs
     FROM attempts WHERE status = 'SUCCESS' AND ended_ms IS NOT NULL
     GROUP BY capability ORDER BY capability`,
  ).all();
  const waitHints = stmt<[], { capability: string; meanMs: number }>(
    db,
    `SELECT capability, AVG(wait_hint_ms) AS meanMs FROM attempts
     WHERE wait_hint_ms IS NOT NULL AND wait_hint_ms > 0 GROUP BY capability ORDER BY capability`,
  ).all();
  const failRetries = stmt<[], { n: number }>(db, "SELECT COUNT(*) AS n FROM attempts WHERE status = 'FAIL'").get()!.n;
  return { latency, waitHints, stepCapabilities, failRetries };
}

/**
 * Where a photo found stands, for `darkroom plan`: the item of its content (a photo is its
 * content: every name with these bytes is this item, ledger/discovery.ts), else of its name;
 * with whether `run --redo-steps` would send it back to the first step (redoCondition). One
 * photo at a time, by the ledger's indexes: plan holds no map of the archive.
 */
export function itemStateLookup(
  db: Database.Database,
  current: string,
  jobCaps: readonly string[],
): (contentHash: string, relPath: string) => ItemStateOf | undefined {
  const redo = redoCondition(db, jobCaps);
  const columns = `id, rel_path AS relPath, state, step_index AS step, ${redo === null ? '0' : `(${redo})`} AS redo`;
  type Row = Omit<ItemStateOf, 'redo' | 'byContent'> & { redo: number };
  const byHash = stmt<string[], Row>(db, `SELECT ${columns} FROM items WHERE content_hash = ?`);
  const byName = stmt<string[], Row>(db, `SELECT ${columns} FROM items WHERE rel_path = ?`);
  const args = (key: string) => (redo === null ? [key] : [current, key]);
  return (contentHash, relPath) => {
    const hashed = byHash.get(...args(contentHash));
    const r = hashed ?? byName.get(...args(relPath));
    return r === undefined ? undefined : { ...r, redo: r.redo === 1, byContent: hashed !== undefined };
  };
}

/** Where a photo stands (itemStateLookup). */
export interface ItemStateOf {
  readonly id: number;
  readonly state: ItemState;
  readonly step: number;
  /** The item's own name (the first found): what the steps census names it by. */
  readonly relPath: string;
  /** `run --redo-steps` would send it back to the first step: started under other steps. */
  readonly redo: boolean;
  /** Found by its content (else by its name: the content is new to the ledger). */
  readonly byContent: boolean;
}

/** Calls per key in the last minute and hour (as `status` counts them), for `plan` and `usage`. */
export function readCallWindows(db: Database.Database, now: number): Record<string, { lastMinute: number; lastHour: number }> {
  return readCallsByKey(db, now, keepsCounts(db)).perKey;
}

/**
 * A read-only connection of its own (WAL lets it read while `run` writes): the progress
 * display of a run reads through one beside the run's writer, `status --watch` through one
 * for its whole life. Never creates a ledger: a missing file is LedgerMissingError.
 */
export class ProgressReader {
  private readonly cache: ProgressCache = { lastCallId: 0, upload: 0, account: 0, calls: 0, slowAtMs: -Infinity };
  private hasChecks: boolean | undefined;

  private constructor(private readonly db: Database.Database) {}

  /** `trace`: told the SQL of every statement run (a test counts what a refresh reads). */
  static open(file: string, opts: { trace?: (sql: string) => void } = {}): ProgressReader {
    return new ProgressReader(openDatabase(file, { readonly: true, ...(opts.trace ? { trace: opts.trace } : {}) }));
  }

  read(now: number, opts: ProgressOptions = {}): ProgressFacts {
    return readProgress(this.db, now, opts, this.cache);
  }

  /** Where each photo found stands, one at a time (itemStateLookup), against the job's step list. */
  itemLookup(current: string, jobCaps: readonly string[]): (contentHash: string, relPath: string) => ItemStateOf | undefined {
    return itemStateLookup(this.db, current, jobCaps);
  }

  /** The hash recorded for a file name whose size and mtime are unchanged (Inputs.cachedHash): `plan` reads its bytes but hashes none again. */
  cachedHash(name: string, sizeBytes: number, mtimeMs: number | null): string | undefined {
    if (mtimeMs === null) return undefined;
    return stmt<[string, number, number], { content_hash: string }>(
      this.db,
      "SELECT content_hash FROM inputs WHERE key = ? AND size_bytes = ? AND mtime_ms = ? AND content_hash NOT LIKE '%:%'",
    ).get(`f:${name}`, sizeBytes, mtimeMs)?.content_hash;
  }

  callWindows(now: number): Record<string, { lastMinute: number; lastHour: number }> {
    return readCallWindows(this.db, now);
  }

  /** What the full decode of a content found (ledger/inputs.ts, InputChecks); undefined on a ledger older than those checks. */
  decodeVerdict(contentHash: string): string | null | undefined {
    this.hasChecks ??= hasTable(this.db, 'input_checks');
    return this.hasChecks ? readVerdict(this.db, contentHash) : undefined;
  }

  /**
   * What holds the ledger now (a `run`, a `retry --held`), unless its process is gone: while
   * it lasts, another run is refused, so advice to run again would lead nowhere.
   */
  runHolder(): LockHolder | undefined {
    if (!hasTable(this.db, 'run_lock')) return undefined;
    const row = stmt<[], LockRow>(this.db, SELECT_HOLDER).get();
    if (!row) return undefined;
    const h = holderFromRow(row);
    return judgeHolder(h, systemProbe.self(), systemProbe) === 'gone' ? undefined : h;
  }

  /**
   * The run following its input folder (`run --follow`), while it does: its row, when the
   * process that wrote it still holds the ledger's lock and has not stopped following.
   */
  following(): FollowState | undefined {
    const f = readFollow(this.db);
    if (!f || f.endedMs !== null) return undefined;
    return this.runHolder()?.pid === f.pid ? f : undefined;
  }

  /** The id this ledger's runs own their calls and slots by in the keys' stores; null before any run. */
  ownerId(): string | null {
    return stmt<[], { value: string }>(this.db, "SELECT value FROM meta WHERE key = 'owner_id'").get()?.value ?? null;
  }

  /** Photos started under other step lists than the job's (`plan`). */
  stepsCensus(current: string, jobCaps: readonly string[]): StepsCensus {
    return readStepsCensus(this.db, current, jobCaps);
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}
