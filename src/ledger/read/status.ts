import type Database from 'better-sqlite3';
import { hasColumn, hasTable, stmt } from '../statements.js';
import { readReviewCounts, type ReviewCounts } from '../reviews.js';
import { inPhase, phaseOf, sqlList, STATES, TERMINAL, type ItemState } from '../transitions.js';
import { countNotDownloaded, listNotDownloaded, type NotDownloaded } from '../outputs.js';

export interface ProblemItem {
  readonly id: number;
  readonly path: string;
  readonly state: 'failed' | 'held' | 'skipped';
  readonly step: number;
  readonly reason: string | null;
  /** The X-Request-Id darkroom sent with the item's latest create, if any. */
  readonly sentRequestId: string | null;
  /** The service's requestId for the failure, if it gave one. */
  readonly requestId: string | null;
  readonly taskId: string | null;
}

/** The states of the items that need a person, as an SQL list. */
export const PROBLEM_STATES = sqlList(inPhase('failed', 'held', 'skipped'));

/** The columns of a ProblemItem, from `items i`; `report` adds its own after them. */
export const PROBLEM_COLUMNS = `i.id, i.rel_path AS path, i.state, i.step_index AS step, i.reason, i.request_id AS requestId, i.task_id AS taskId,
            (SELECT s.request_id FROM submissions s WHERE s.item_id = i.id ORDER BY s.id DESC LIMIT 1) AS sentRequestId`;

/** Items on one step in one state. */
export interface StepGroup {
  readonly step: number;
  readonly state: ItemState;
  readonly n: number;
}

/**
 * One step of the pipeline: where the photos stand with it. done = past it (its task
 * succeeded: the result passed on, being downloaded, or the photo finished); working = at it
 * (for step 1, also still to upload); waiting = not there yet; failed and held = stopped at
 * it. Skipped inputs go through no step. A done photo stays on the last step it ran, so a step added to the
 * job after it finished does not count it as past.
 */
export interface StepStatus {
  /** 0-based, as `step` of a problem. */
  readonly step: number;
  /** The capability, from the pipeline the last run recorded (or the creates made); null if unknown. */
  readonly capability: string | null;
  readonly done: number;
  readonly working: number;
  /** Of working: a task running (active) or its create in flight (submitting). */
  readonly running: number;
  readonly waiting: number;
  readonly failed: number;
  readonly held: number;
}

export interface LedgerStatus {
  readonly total: number;
  readonly done: number;
  /** Photos that went wrong: an ERROR, a refused create, retries exhausted (`darkroom retry --failed`). */
  readonly failed: number;
  /**
   * Inputs darkroom will not send until they change (unreadable, unsupported, no place for
   * their output): refused before any call, each listed with why; not in `total`, nor in any
   * of the figures above or below, and no reason for exit 1.
   */
  readonly skipped: number;
  readonly held: number;
  /** Not yet terminal. total = done + failed + held + pending. */
  readonly pending: number;
  /**
   * Photos whose files were deleted (or URL lines removed) before they were done
   * (ledger/discovery.ts, markGone): not in `total`, nor in any of the figures above.
   */
  readonly gone: number;
  readonly states: Record<ItemState, number>;
  readonly calls: { readonly total: number; readonly perKey: Record<string, { lastMinute: number; lastHour: number }> };
  readonly problems: readonly ProblemItem[];
  /** Per step of a multi-step pipeline; one entry for a single step. */
  readonly steps: readonly StepStatus[];
  /** Of pending: photos whose last task succeeded (paid) and whose output is not on disk yet (ledger/outputs.ts). */
  readonly paidNotDownloaded: number;
  /** The first 200 of them, with why their last download failed. */
  readonly notDownloaded: readonly NotDownloaded[];
  /**
   * Outputs written without their input's metadata although output.metadata asked for it
   * (a corrupt EXIF, an input gone, an ExifTool error): the photo is done, its output is the
   * service's, marked with why.
   */
  readonly metadataNotCarried: number;
  /** The first 200 of them: the input's path, the output, and why. */
  readonly metadataNotes: readonly MetadataNote[];
  /** Of the done photos: accepted, rejected and not yet reviewed (`darkroom review`). */
  readonly review: ReviewCounts;
}

/** An output its input's metadata did not reach, and why. */
export interface MetadataNote {
  readonly path: string;
  readonly output: string;
  readonly reason: string;
  /** What the output carries ('all', 'basic': the input's tags less what `reason` names; 'provenance', 'none'). */
  readonly level: 'all' | 'basic' | 'provenance' | 'none' | null;
}

/** Everything `darkroom status` shows, read from the ledger alone. */
export function readStatus(db: Database.Database, now: number, problemLimit = 200): LedgerStatus {
  const counted = keepsCounts(db);
  const groups = readItemGroups(db, counted);
  const states = Object.fromEntries(STATES.map((s) => [s, 0])) as Record<ItemState, number>;
  for (const g of groups) states[g.state] += g.n;
  // A gone photo is no longer an input, a skipped one will not be sent: both outside the total
  // (total = done + failed + held + pending), so "all done" can be reached beside them.
  const total = Object.values(states).reduce((a, b) => a + b, 0) - states.gone - states.skipped;
  const pending = STATES.filter((s) => !TERMINAL.has(s)).reduce((a, s) => a + states[s], 0);

  const { perKey, total: totalCalls } = readCallsByKey(db, now, counted);

  const problems = stmt<[number], ProblemItem>(
    db,
    `SELECT ${PROBLEM_COLUMNS} FROM items i WHERE i.state IN ${PROBLEM_STATES} ORDER BY i.state, i.id LIMIT ?`,
  ).all(problemLimit);

  return {
    steps: readSteps(db, groups, counted),
    total,
    done: states.done,
    failed: states.failed,
    skipped: states.skipped,
    held: states.held,
    pending,
    gone: states.gone,
    states,
    calls: { total: totalCalls, perKey },
    problems,
    paidNotDownloaded: countNotDownloaded(db),
    notDownloaded: listNotDownloaded(db, problemLimit),
    ...metadataNotes(db, problemLimit),
    review: readReviewCounts(db, states.done),
  };
}

/**
 * Whether the ledger keeps its own counts of photos, calls and tasks (migrations/013_ledger_counts.sql,
 * triggers that change them with the rows): then a figure is read from a few rows whatever
 * the size of the archive. A ledger opened read-only may predate them: it is counted from its rows.
 */
export function keepsCounts(db: Database.Database): boolean {
  return hasTable(db, 'item_counts');
}

/** Photos per state and step, in (state, step) order. */
function readItemGroups(db: Database.Database, counted: boolean): StepGroup[] {
  if (counted) {
    return stmt<[], StepGroup>(db, 'SELECT step_index AS step, state, n FROM item_counts WHERE n > 0 ORDER BY state, step_index').all();
  }
  // One scan of the (state, step_index) index gives both the state counts and the steps.
  return stmt<[], StepGroup>(db, 'SELECT step_index AS step, state, COUNT(*) AS n FROM items GROUP BY state, step_index').all();
}

/** Calls per key in the last minute and hour (the keys with calls in the last hour), and all calls ever. */
export function readCallsByKey(
  db: Database.Database,
  now: number,
  counted: boolean,
): { perKey: Record<string, { lastMinute: number; lastHour: number }>; total: number } {
  const perKey: Record<string, { lastMinute: number; lastHour: number }> = {};
  if (!counted) {
    const rows = stmt<[number, number], { key_fp: string; minute: number; hour: number }>(
      db,
      `SELECT key_fp, SUM(at_ms > ?) AS minute, COUNT(*) AS hour FROM calls WHERE at_ms > ? GROUP BY key_fp ORDER BY key_fp`,
    ).all(now - 60_000, now - 3_600_000);
    for (const r of rows) perKey[r.key_fp] = { lastMinute: r.minute, lastHour: r.hour };
    return { perKey, total: stmt<[], { n: number }>(db, 'SELECT COUNT(*) AS n FROM calls').get()!.n };
  }
  // Key by key through the (key_fp, at_ms) index: the last hour's calls alone are read.
  const window = stmt<[number, string, number], { minute: number | null; hour: number }>(
    db,
    'SELECT SUM(at_ms > ?) AS minute, COUNT(*) AS hour FROM calls WHERE key_fp = ? AND at_ms > ?',
  );
  for (const key of readKeys(db, true)) {
    const r = window.get(now - 60_000, key, now - 3_600_000)!;
    if (r.hour > 0) perKey[key] = { lastMinute: r.minute ?? 0, lastHour: r.hour };
  }
  return { perKey, total: stmt<[], { n: number | null }>(db, 'SELECT SUM(n) AS n FROM call_counts').get()!.n ?? 0 };
}

/** Every key that made a call, in order. */
export function readKeys(db: Database.Database, counted = keepsCounts(db)): string[] {
  return stmt<[], { key_fp: string }>(
    db,
    counted ? 'SELECT DISTINCT key_fp FROM call_counts ORDER BY key_fp' : 'SELECT DISTINCT key_fp FROM calls ORDER BY key_fp',
  )
    .all()
    .map((r) => r.key_fp);
}

/** Whether output_files has migration 009's columns: a ledger opened read-only is not migrated, and may predate them. */
export function hasOutputMetadata(db: Database.Database): boolean {
  return hasColumn(db, 'output_files', 'meta_note');
}

/** Outputs marked "metadata not carried" (none on a ledger older than migration 009, read as it is). */
function metadataNotes(db: Database.Database, limit: number): { metadataNotCarried: number; metadataNotes: MetadataNote[] } {
  if (!hasOutputMetadata(db)) return { metadataNotCarried: 0, metadataNotes: [] };
  const where = "f.kind = 'output' AND f.meta_note IS NOT NULL";
  const n = stmt<[], { n: number }>(db, `SELECT COUNT(*) AS n FROM output_files f WHERE ${where}`).get()!.n;
  const notes = stmt<[number], MetadataNote>(
    db,
    `SELECT COALESCE(n.name, i.rel_path) AS path, f.path AS output, f.meta_note AS reason, f.meta AS level
     FROM output_files f JOIN items i ON i.id = f.item_id LEFT JOIN inputs n ON n.id = f.input_id
     WHERE ${where} ORDER BY f.path LIMIT ?`,
  ).all(limit);
  return { metadataNotCarried: n, metadataNotes: notes };
}

/** The steps the last run recorded (`meta.pipeline`), else those the creates were made for, folded with the items. */
function readSteps(db: Database.Database, groups: readonly StepGroup[], counted: boolean): StepStatus[] {
  const meta = stmt<[], { value: string }>(db, "SELECT value FROM meta WHERE key = 'pipeline'").get();
  let pipeline: string[] = [];
  try {
    const parsed: unknown = meta ? JSON.parse(meta.value) : [];
    if (Array.isArray(parsed)) pipeline = parsed.map(String);
  } catch {
    pipeline = [];
  }
  const made = readStepCapabilities(db, counted);
  const known = Math.max(pipeline.length, ...made.map((m) => m.step + 1));
  return foldSteps(
    groups,
    Array.from({ length: known }, (_, s) => pipeline[s] ?? made.find((m) => m.step === s)?.capability ?? null),
  );
}

/** The capability each step index ran as, from the creates made: the first by name, by step. */
export function readStepCapabilities(db: Database.Database, counted = keepsCounts(db)): { step: number; capability: string }[] {
  return stmt<[], { step: number; capability: string }>(
    db,
    counted
      ? 'SELECT step_index AS step, capability FROM step_capabilities ORDER BY step_index'
      : 'SELECT step_index AS step, MIN(capability) AS capability FROM submissions GROUP BY step_index ORDER BY step_index',
  ).all();
}

/**
 * Items per step and state (`groups`) folded into StepStatus, one per step: at least one,
 * every step of `capabilities` (which names them) and every step an item is on.
 */
export function foldSteps(groups: readonly StepGroup[], capabilities: readonly (string | null)[]): StepStatus[] {
  const count = Math.max(1, capabilities.length, ...groups.map((g) => g.step + 1));
  return Array.from({ length: count }, (_, s) => {
    const out = { step: s, capability: capabilities[s] ?? null, done: 0, working: 0, waiting: 0, failed: 0, held: 0, running: 0 };
    for (const g of groups) {
      const phase = phaseOf(g.state);
      if (phase === 'gone' || phase === 'skipped') continue; // no longer an input, or one never sent
      if (g.step > s) out.done += g.n;
      else if (g.step < s) {
        if (!TERMINAL.has(g.state)) out.waiting += g.n;
      } else if (phase === 'paid' || phase === 'done') out.done += g.n;
      else if (phase === 'failed') out.failed += g.n;
      else if (phase === 'held') out.held += g.n;
      else {
        out.working += g.n;
        if (phase === 'running') out.running += g.n;
      }
    }
    return out;
  });
}
