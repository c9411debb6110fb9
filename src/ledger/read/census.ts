import type Database from 'better-sqlite3';
import { hasColumn, hasTable, stmt } from '../statements.js';
import { inPhase, sqlList, type ItemState } from '../transitions.js';

/**
 * The census of step lists (stepLists.ts says why photos follow one list each): which other
 * lists have started photos, and where those stand. Read-only, so `plan` and `status` read it
 * from a ledger they must not change, older ones included.
 */

/** Started photos of one other step list, by where they stand. */
export interface OtherList {
  /** Its signature; LEGACY_SIG for photos of an older ledger whose capabilities differ from the job's. */
  readonly sig: string;
  /** The list as canonical JSON (src/config/steps.ts), when known. */
  readonly stepsJson: string | null;
  /** Finished: their outputs are on disk. */
  readonly done: number;
  /** Between the upload and the download: on a later step, a create or task in flight, a result not yet downloaded. */
  readonly inProgress: number;
  /** Of inProgress: a task running now (created and paid for). */
  readonly running: number;
  /** Of inProgress: a task finished, its result not yet downloaded (paid for). */
  readonly notDownloaded: number;
  /** Held (create outcome unknown, or the task timed out). */
  readonly held: number;
  /** Failed: nothing in flight, no output; bound to the job's steps when the run goes on. */
  readonly failed: number;
}

export interface StepsCensus {
  /** The job's list signature. */
  readonly current: string;
  /** Other lists with started photos, most photos first. */
  readonly others: readonly OtherList[];
  /** Photos that would adopt the job's list silently (not yet started, or already following it). */
  readonly adoptable: number;
}

/** The signature given to photos of a pre-007 ledger whose recorded capabilities are not the job's. */
export const LEGACY_SIG = 'legacy';

/** Started photos that block a run under other steps: everything but failed ones (those are bound, not redone). */
export function blocking(o: OtherList): number {
  return o.done + o.inProgress + o.held;
}

export const NOT_STARTED: ReadonlySet<ItemState> = new Set(inPhase('upload', 'skipped'));
const IN_PROGRESS: ReadonlySet<ItemState> = new Set(inPhase('create', 'running', 'paid'));
/** What a redo sends back to the first step: started and not failed (an `uploaded` photo only on a later step). */
const REDONE = inPhase('running', 'paid', 'done', 'held');

interface Group {
  sig: string | null;
  state: ItemState;
  later: number;
  n: number;
}

/**
 * The census, read in one transaction. `legacyCaps` is meta `pipeline` (the capabilities the
 * last run of an older darkroom recorded), `jobCaps` the job's: unsigned photos follow the
 * job's list when the two agree (or nothing was recorded).
 */
export function readStepsCensus(db: Database.Database, current: string, jobCaps: readonly string[]): StepsCensus {
  return db.transaction(() => {
    if (!hasColumn(db, 'items', 'steps_sig')) return legacyCensus(db, current, jobCaps);
    // Three seeks of the steps_sig index, not one `IS NULL OR != ?`, which SQLite answers by
    // reading the whole index: a million photos that all follow the job's list cost nothing here.
    const groups = stmt<[string, string], Group>(
      db,
      `SELECT steps_sig AS sig, state, step_index > 0 AS later, COUNT(*) AS n FROM (
         SELECT steps_sig, state, step_index FROM items WHERE steps_sig IS NULL
         UNION ALL SELECT steps_sig, state, step_index FROM items WHERE steps_sig < ?
         UNION ALL SELECT steps_sig, state, step_index FROM items WHERE steps_sig > ?)
       GROUP BY steps_sig, state, later`,
    ).all(current, current);
    const legacyFollowsJob = legacyMatches(db, jobCaps);
    return foldCensus(db, current, groups, legacyFollowsJob);
  })();
}

/**
 * The photos a redo would send back to the first step (started under other lists, not failed),
 * as a condition on `items` with its one parameter, the job's list; null when there are none.
 */
export function redoCondition(db: Database.Database, jobCaps: readonly string[]): string | null {
  const signed = hasColumn(db, 'items', 'steps_sig');
  if (!signed && legacyMatches(db, jobCaps)) return null;
  const where = signed
    ? legacyMatches(db, jobCaps)
      ? 'steps_sig IS NOT NULL AND steps_sig != ?'
      : '(steps_sig IS NULL OR steps_sig != ?)'
    : '? IS NOT NULL';
  return `${where} AND (state IN ${sqlList(REDONE)} OR (state = 'uploaded' AND step_index > 0))`;
}

/** A ledger not yet migrated to 007 (read-only `plan`): every photo is unsigned. */
function legacyCensus(db: Database.Database, current: string, jobCaps: readonly string[]): StepsCensus {
  const groups = stmt<[], Group>(
    db,
    'SELECT NULL AS sig, state, step_index > 0 AS later, COUNT(*) AS n FROM items GROUP BY state, later',
  ).all();
  return foldCensus(db, current, groups, legacyMatches(db, jobCaps));
}

function foldCensus(db: Database.Database, current: string, groups: readonly Group[], legacyFollowsJob: boolean): StepsCensus {
  const bySig = new Map<
    string,
    { done: number; inProgress: number; running: number; notDownloaded: number; held: number; failed: number }
  >();
  let adoptable = 0;
  for (const g of groups) {
    const sig = g.sig ?? (legacyFollowsJob ? current : LEGACY_SIG);
    const started = !(NOT_STARTED.has(g.state) || (g.state === 'uploaded' && !g.later));
    if (!started || sig === current) {
      adoptable += g.n;
      continue;
    }
    let o = bySig.get(sig);
    if (!o) bySig.set(sig, (o = { done: 0, inProgress: 0, running: 0, notDownloaded: 0, held: 0, failed: 0 }));
    if (g.state === 'done') o.done += g.n;
    else if (g.state === 'held') o.held += g.n;
    else if (g.state === 'failed') o.failed += g.n;
    else if (IN_PROGRESS.has(g.state)) {
      o.inProgress += g.n;
      if (g.state === 'active') o.running += g.n;
      if (g.state === 'succeeded' || g.state === 'downloading') o.notDownloaded += g.n;
    }
  }
  const others = [...bySig.entries()]
    .map(([sig, o]): OtherList => ({ sig, stepsJson: sig === LEGACY_SIG ? legacyJson(db) : listJson(db, sig), ...o }))
    .sort((a, b) => blocking(b) + b.failed - (blocking(a) + a.failed) || (a.sig < b.sig ? -1 : 1));
  return { current, others, adoptable };
}

export function listJson(db: Database.Database, sig: string): string | null {
  if (!hasTable(db, 'step_lists')) return null;
  return stmt<[string], { steps: string }>(db, 'SELECT steps FROM step_lists WHERE sig = ?').get(sig)?.steps ?? null;
}

/** The capabilities an older darkroom recorded, as a step list without options. */
export function legacyJson(db: Database.Database): string | null {
  const caps = legacyCaps(db);
  return caps === null ? null : JSON.stringify(caps.map((c) => ({ capability: c })));
}

function legacyCaps(db: Database.Database): string[] | null {
  const meta = stmt<[], { value: string }>(db, "SELECT value FROM meta WHERE key = 'pipeline'").get();
  if (!meta) return null;
  try {
    const v: unknown = JSON.parse(meta.value);
    return Array.isArray(v) ? v.map(String) : null;
  } catch {
    return null;
  }
}

export function legacyMatches(db: Database.Database, jobCaps: readonly string[]): boolean {
  const caps = legacyCaps(db);
  return caps === null || (caps.length === jobCaps.length && caps.every((c, i) => c === jobCaps[i]));
}
