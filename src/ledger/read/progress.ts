import type Database from 'better-sqlite3';
import { readFollow, type FollowState } from '../follow.js';
import { readVerdict } from '../inputs.js';
import { holderFromRow, judgeHolder, SELECT_HOLDER, systemProbe, type LockRow } from '../lock.js';
import type { LockHolder } from '../../errors.js';
import { openDatabase } from '../open.js';
import { stmt } from '../statements.js';
import { readRedoPaths, readStepsCensus, type StepsCensus } from './census.js';
import { readStatus, type LedgerStatus, type StepGroup } from './status.js';
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
 * ledger. Calls are append-only (rowid order), so their counts by kind are kept up to date
 * from the rows added since the last read; figures over the attempts and submissions
 * tables change slowly and are re-read at most every 30 s.
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

    // By the calls_endpoint index (migration 004), and on a first read the count of the whole
    // table that status has made (COUNT(*), which SQLite answers from page counts: ~3 ms on
    // 130,000 calls, where one pass over the rows after lastCallId took ~50 ms).
    const since = c.lastCallId;
    const kinds = stmt<[number, number], { upload: number; account: number; last: number | null }>(
      db,
      `SELECT (SELECT COUNT(*) FROM calls WHERE endpoint = '/api/v1/image/upload' AND id > ?) AS upload,
              (SELECT COUNT(*) FROM calls WHERE endpoint IN ('/api/v1/credits', '/api/v1/usage') AND id > ?) AS account,
              (SELECT MAX(id) FROM calls) AS last`,
    ).get(since, since)!;
    const n =
      since === 0 ? status.calls.total : stmt<[number], { n: number }>(db, 'SELECT COUNT(*) AS n FROM calls WHERE id > ?').get(since)!.n;
    c.upload += kinds.upload;
    c.account += kinds.account;
    c.calls += n;
    c.lastCallId = kinds.last ?? c.lastCallId;

    if (!c.slow || now - c.slowAtMs >= SLOW_EVERY_MS || now < c.slowAtMs) {
      c.slow = readSlow(db);
      c.slowAtMs = now;
    }
    const slow = c.slow;

    // Items by (step, state): through the state index for the states that can be on any
    // step, from the state counts for the others.
    const byStep: StepGroup[] = stmt<[], StepGroup>(
      db,
      `SELECT step_index AS step, state, COUNT(*) AS n FROM items
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
    const windowKeys = sinceMs >= now - 3_600_000 ? keysInHour : readKeys(db);
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
      callsByKind: { upload: c.upload, account: c.account, task: c.calls - c.upload - c.account },
      recent: { sinceMs, done, calls: recentCalls.n, firstCallMs: recentCalls.first },
      ...slow,
    };
  })();
}

function readKeys(db: Database.Database): string[] {
  return stmt<[], { key_fp: string }>(db, 'SELECT DISTINCT key_fp FROM calls')
    .all()
    .map((r) => r.key_fp);
}

function readSlow(db: Database.Database): Pick<ProgressFacts, 'latency' | 'waitHints' | 'stepCapabilities' | 'failRetries'> {
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
  const stepCapabilities = stmt<[], { step: number; capability: string }>(
    db,
    'SELECT step_index AS step, MIN(capability) AS capability FROM submissions GROUP BY step_index ORDER BY step_index',
  ).all();
  const failRetries = stmt<[], { n: number }>(db, "SELECT COUNT(*) AS n FROM attempts WHERE status = 'FAIL'").get()!.n;
  return { latency, waitHints, stepCapabilities, failRetries };
}

/** The state and step of every item by its path under input.dir, for `darkroom plan`. */
export function readItemStates(db: Database.Database): Map<string, ItemStateOf> {
  const out = new Map<string, ItemStateOf>();
  for (const r of stmt<[], { rel_path: string; content_hash: string | null; state: ItemState; step: number }>(
    db,
    'SELECT rel_path, content_hash, state, step_index AS step FROM items',
  ).iterate()) {
    const v = { state: r.state, step: r.step, relPath: r.rel_path };
    out.set(r.rel_path, v);
    // A photo is its content: every name with these bytes is this item (ledger/discovery.ts).
    if (r.content_hash !== null) out.set(`sha256:${r.content_hash}`, v);
  }
  return out;
}

/** Where a photo stands, by its first name (`rel_path`) and by `sha256:` + its content hash: readItemStates. */
export interface ItemStateOf {
  readonly state: ItemState;
  readonly step: number;
  /** The item's own name (the first found): what the steps census names it by. */
  readonly relPath: string;
}

/** Calls per key in the last minute and hour (as `status` counts them), for `plan` and `usage`. */
export function readCallWindows(db: Database.Database, now: number): Record<string, { lastMinute: number; lastHour: number }> {
  return readStatus(db, now, 0).calls.perKey;
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

  static open(file: string): ProgressReader {
    return new ProgressReader(openDatabase(file, { readonly: true }));
  }

  read(now: number, opts: ProgressOptions = {}): ProgressFacts {
    return readProgress(this.db, now, opts, this.cache);
  }

  itemStates(): Map<string, ItemStateOf> {
    return readItemStates(this.db);
  }

  callWindows(now: number): Record<string, { lastMinute: number; lastHour: number }> {
    return readCallWindows(this.db, now);
  }

  /** What the full decode of a content found (ledger/inputs.ts, InputChecks); undefined on a ledger older than those checks. */
  decodeVerdict(contentHash: string): string | null | undefined {
    this.hasChecks ??= stmt(this.db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'input_checks'").get() !== undefined;
    return this.hasChecks ? readVerdict(this.db, contentHash) : undefined;
  }

  /**
   * What holds the ledger now (a `run`, a `retry --held`), unless its process is gone: while
   * it lasts, another run is refused, so advice to run again would lead nowhere.
   */
  runHolder(): LockHolder | undefined {
    if (stmt(this.db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'run_lock'").get() === undefined) return undefined;
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

  /** Photos started under other step lists than the job's (`plan`), and their labels. */
  stepsCensus(current: string, jobCaps: readonly string[]): { census: StepsCensus; redo: Set<string> } {
    return { census: readStepsCensus(this.db, current, jobCaps), redo: readRedoPaths(this.db, current, jobCaps) };
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}
