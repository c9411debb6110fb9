import type Database from 'better-sqlite3';
import { clock } from '../clock.js';
import { crashPoint } from './crashpoint.js';
import type { ItemPatch, ItemRow } from './rows.js';
import { inTransaction, stmt } from './statements.js';
import { assertTransition, createsLeftSql, inPhase, sqlList, type ItemState } from './transitions.js';
import { StaleStateError } from '../errors.js';

const PATCHABLE = new Set([
  'src_path',
  'size_bytes',
  'content_hash',
  'step_index',
  'attempt',
  'key_fp',
  'image_url',
  'input_url',
  'task_id',
  'business_type',
  'task_started_ms',
  'result_url',
  'output_path',
  'reason',
  'request_id',
  'due_ms',
  'retries',
  'hold_kind',
  'steps_sig',
  'forgotten_uploads',
]);

/** The columns of a patch that may be set, in the patch's own order. */
function patchKeys(patch: ItemPatch): string[] {
  return Object.keys(patch).filter((k) => PATCHABLE.has(k));
}

/** Item reads and the one guarded write every state change goes through. */
export class Items {
  private readonly byId;
  private readonly insertTransition;
  /** firstDue's SQL by WHERE clause and number of excluded ids. */
  private readonly probes = new Map<string, string[]>();
  /** move's and patch's UPDATEs by the columns they set. */
  private readonly updates = new Map<string, Database.Statement>();
  /** byStates' statements by question and list of states. */
  private readonly stateStatements = new Map<string, Database.Statement>();

  constructor(private readonly db: Database.Database) {
    this.byId = db.prepare<[number], ItemRow>('SELECT * FROM items WHERE id = ?');
    this.insertTransition = db.prepare('INSERT INTO transitions (item_id, at_ms, from_state, to_state, note) VALUES (?, ?, ?, ?, ?)');
  }

  get(id: number): ItemRow | undefined {
    return this.byId.get(id);
  }

  /**
   * Move an item from `from` to `to`, checked against the transition table and guarded
   * by the state it is expected in. Callers wanting atomicity with other writes wrap
   * this in their own transaction (better-sqlite3 nests them as savepoints).
   */
  move(id: number, from: ItemState, to: ItemState, patch: ItemPatch = {}, note: string | null = null): ItemRow {
    assertTransition(from, to);
    // Leaving `held` clears why it was held, whoever moves it.
    if (from === 'held' && !('hold_kind' in patch)) patch = { ...patch, hold_kind: null };
    const now = clock.now();
    const keys = patchKeys(patch);
    const update = this.updateFor(
      'move',
      keys,
      (sets) => `UPDATE items SET state = ?, updated_ms = ?${sets} WHERE id = ? AND state = ? RETURNING *`,
    );
    const params: unknown[] = [to, now];
    for (const k of keys) params.push((patch as Record<string, unknown>)[k] ?? null);
    params.push(id, from);
    return inTransaction(this.db, () => {
      // RETURNING: the row as the UPDATE left it, without a second lookup.
      const row = update.get(...params) as ItemRow | undefined;
      if (row === undefined) throw new StaleStateError(id, from, this.get(id)?.state);
      this.insertTransition.run(id, now, from, to, note);
      crashPoint('ledger'); // mid-transaction: the whole move must roll back
      return row;
    });
  }

  /** Update fields without a state change (poll bookkeeping), guarded by the state. */
  patch(id: number, state: ItemState, patch: ItemPatch): void {
    const keys = patchKeys(patch);
    if (keys.length === 0) return;
    const update = this.updateFor('patch', keys, (sets) => `UPDATE items SET updated_ms = ?${sets} WHERE id = ? AND state = ?`);
    const params: unknown[] = [clock.now()];
    for (const k of keys) params.push((patch as Record<string, unknown>)[k] ?? null);
    params.push(id, state);
    const r = update.run(...params);
    if (r.changes !== 1) throw new StaleStateError(id, state, this.get(id)?.state);
  }

  /**
   * move's and patch's UPDATE for one set of patched columns, prepared once: ~70,000 state
   * changes in W1, each of which built its SQL text and looked it up by that text.
   */
  private updateFor(kind: 'move' | 'patch', keys: readonly string[], sql: (sets: string) => string): Database.Statement {
    const sig = `${kind}:${keys.join(',')}`;
    let s = this.updates.get(sig);
    if (!s) {
      s = this.db.prepare(sql(keys.map((k) => `, ${k} = ?`).join('')));
      this.updates.set(sig, s);
    }
    return s;
  }

  /** The next queued item this lane may upload: unclaimed or already its own, due now. */
  nextToUpload(keyFp: string, now: number, exclude: ReadonlySet<number>): ItemRow | undefined {
    // Two indexed lookups, not one `key_fp IS NULL OR key_fp = ?`: the OR makes SQLite
    // sort every queued row, which at 10,000 photos is most of a simulation's time.
    const own = this.firstDue("state = 'queued' AND key_fp = ? AND due_ms <= ?", [keyFp, now], exclude);
    const free = this.firstDue("state = 'queued' AND key_fp IS NULL AND due_ms <= ?", [now], exclude);
    if (!own) return free === undefined ? undefined : this.get(free.id);
    if (!free) return this.get(own.id);
    return this.get(own.due_ms < free.due_ms || (own.due_ms === free.due_ms && own.id < free.id) ? own.id : free.id);
  }

  nextInState(state: ItemState, keyFp: string, now: number, exclude: ReadonlySet<number>): ItemRow | undefined {
    const first = this.firstDue('state = ? AND key_fp = ? AND due_ms <= ?', [state, keyFp, now], exclude);
    return first === undefined ? undefined : this.get(first.id);
  }

  /** Whether nextInState would find an item, without reading it. */
  hasDue(state: ItemState, keyFp: string, now: number, exclude: ReadonlySet<number>): boolean {
    return this.firstDue('state = ? AND key_fp = ? AND due_ms <= ?', [state, keyFp, now], exclude) !== undefined;
  }

  /** Earliest due time among items of a lane in a state (or unclaimed queued ones, unless `ownOnly`). */
  earliestDue(state: ItemState, keyFp: string, exclude: ReadonlySet<number>, ownOnly = false): number | undefined {
    const own = this.firstDue('state = ? AND key_fp = ?', [state, keyFp], exclude)?.due_ms;
    if (state !== 'queued' || ownOnly) return own;
    const free = this.firstDue("state = 'queued' AND key_fp IS NULL", [], exclude)?.due_ms;
    return own === undefined ? free : free === undefined ? own : Math.min(own, free);
  }

  /**
   * Claim a queued photo for a lane before its upload starts, in the same tick it was
   * picked, so two lanes can never both take it. Guarded: false if another lane has it.
   */
  claimQueued(id: number, keyFp: string): boolean {
    const r = stmt(this.db, "UPDATE items SET key_fp = ? WHERE id = ? AND state = 'queued' AND (key_fp IS NULL OR key_fp = ?)").run(
      keyFp,
      id,
      keyFp,
    );
    return r.changes === 1;
  }

  /**
   * A photo not yet uploaded is bound to no key: a run that starts with other keys must
   * be able to take it. (From the upload on, an item keeps its key to the end.)
   */
  releaseQueuedClaims(): number {
    return stmt(this.db, "UPDATE items SET key_fp = NULL WHERE state = 'queued' AND key_fp IS NOT NULL").run().changes;
  }

  /** Whether a lane has any item in these states (an indexed probe, unlike a count). */
  hasInStates(keyFp: string, states: readonly ItemState[]): boolean {
    return (
      this.byStates('has', states, (marks) => `SELECT 1 FROM items WHERE key_fp = ? AND state IN (${marks}) LIMIT 1`).get(
        keyFp,
        ...states,
      ) !== undefined
    );
  }

  /** Each (step, state) some photo not finished is in, once: what the credit limit checks before a run starts. */
  pendingSteps(): Array<Pick<ItemRow, 'step_index' | 'state'>> {
    return stmt<[], Pick<ItemRow, 'step_index' | 'state'>>(
      this.db,
      `SELECT DISTINCT step_index, state FROM items WHERE state IN ${sqlList(inPhase('upload', 'create', 'running', 'paid'))}`,
    ).all();
  }

  /** Photos not finished whose first create was sent: a task of theirs exists or ran, or they are past their first step. */
  countStartedUnfinished(): number {
    return stmt<[], { n: number }>(
      this.db,
      `SELECT COUNT(*) AS n FROM items WHERE state IN ${sqlList(inPhase('running', 'paid'))}
         OR (state IN ${sqlList(inPhase('upload', 'create'))} AND step_index > 0)`,
    ).get()!.n;
  }

  /** Whether unclaimed photos wait to be uploaded by any lane. */
  hasUnclaimed(): boolean {
    return stmt(this.db, "SELECT 1 FROM items WHERE state = 'queued' AND key_fp IS NULL LIMIT 1").get() !== undefined;
  }

  countInStates(keyFp: string | null, states: readonly ItemState[]): number {
    if (keyFp === null) {
      return (
        this.byStates('count', states, (marks) => `SELECT COUNT(*) AS n FROM items WHERE state IN (${marks})`).get(...states) as {
          n: number;
        }
      ).n;
    }
    return (
      this.byStates('countKey', states, (marks) => `SELECT COUNT(*) AS n FROM items WHERE key_fp = ? AND state IN (${marks})`).get(
        keyFp,
        ...states,
      ) as {
        n: number;
      }
    ).n;
  }

  /**
   * The statement for a question about a list of states, prepared once per list: the lanes
   * ask these ~200,000 times in W1, and building and looking up the SQL text each time cost
   * more than SQLite's answer.
   */
  private byStates(kind: string, states: readonly ItemState[], sql: (marks: string) => string): Database.Statement {
    const key = `${kind}:${states.join(',')}`;
    let s = this.stateStatements.get(key);
    if (!s) {
      s = stmt(this.db, sql(states.map(() => '?').join(',')));
      this.stateStatements.set(key, s);
    }
    return s;
  }

  /** Items not yet terminal that this lane can still act on (unclaimed queued ones count for every lane). */
  pendingFor(keyFp: string): number {
    return (
      stmt(
        this.db,
        `SELECT COUNT(*) AS n FROM items
         WHERE state NOT IN ('done', 'held', 'failed', 'skipped', 'gone')
           AND (key_fp = ? OR (key_fp IS NULL AND state = 'queued'))`,
      ).get(keyFp) as { n: number }
    ).n;
  }

  /**
   * Work a lane has left, for its pacing: photos still to upload (its own plus the
   * unclaimed ones any lane may take), and steps still to create and poll.
   */
  remainingWork(keyFp: string, stepCount: number): { ownQueued: number; unclaimed: number; stepsLeft: number } {
    const count = (sql: string, ...params: unknown[]) => (stmt(this.db, sql).get(...params) as { n: number | null }).n ?? 0;
    return {
      ownQueued: count("SELECT COUNT(*) AS n FROM items WHERE state = 'queued' AND key_fp = ?", keyFp),
      unclaimed: count("SELECT COUNT(*) AS n FROM items WHERE state = 'queued' AND key_fp IS NULL"),
      stepsLeft: count(
        `SELECT SUM(? - step_index) AS n FROM items
         WHERE state IN ('uploading', 'uploaded', 'submitting', 'active') AND key_fp = ?`,
        stepCount,
        keyFp,
      ),
    };
  }

  inState(state: ItemState, limit = 1000): ItemRow[] {
    return this.db.prepare<[string, number], ItemRow>('SELECT * FROM items WHERE state = ? ORDER BY id LIMIT ?').all(state, limit);
  }

  /** One key's items in `state`, fewest due first (a lane's tasks: its slots bound them). */
  inStateFor(state: ItemState, keyFp: string, limit = 100): ItemRow[] {
    return stmt<[string, string, number], ItemRow>(
      this.db,
      'SELECT * FROM items WHERE state = ? AND key_fp = ? ORDER BY due_ms, id LIMIT ?',
    ).all(state, keyFp, limit);
  }

  all(): ItemRow[] {
    return this.db.prepare<[], ItemRow>('SELECT * FROM items ORDER BY id').all();
  }

  /**
   * The scheduler asks "what is due?" tens of thousands of times a night: probe the index
   * for the first (due_ms, id) not in `exclude` (the items already in flight), one row of
   * two columns, and let the caller read the whole row once, for the one item chosen.
   * `.get()` on `id NOT IN (…)` rather than `.all()` of `exclude.size + 1` rows and a filter
   * in JS: the same row, but better-sqlite3's `.all()` costs ~10 µs more per call, and
   * these probes run ~150,000 times in W1. For the ledger's own modules (outputs.ts) only.
   */
  firstDue(where: string, params: readonly unknown[], exclude: ReadonlySet<number>): { id: number; due_ms: number } | undefined {
    let bySize = this.probes.get(where);
    if (!bySize) this.probes.set(where, (bySize = []));
    const n = exclude.size;
    const sql = (bySize[n] ??= `SELECT id, due_ms FROM items WHERE ${where}${
      n > 0 ? ` AND id NOT IN (${Array.from({ length: n }, () => '?').join(', ')})` : ''
    } ORDER BY due_ms, id LIMIT 1`);
    const s = stmt<unknown[], { id: number; due_ms: number }>(this.db, sql);
    return n === 0 ? s.get(...params) : s.get(...params, ...exclude);
  }
}

/**
 * Creates still to be made for every photo that is not finished (createsLeft in
 * transitions.ts, summed in SQL): one per remaining step, the current one included unless
 * its task exists. Held, failed and skipped photos need none until an operator acts.
 */
export function createsNeeded(db: Database.Database, stepCount: number): number {
  const r = stmt<[{ steps: number }], { n: number | null }>(
    db,
    `SELECT SUM(${createsLeftSql()}) AS n FROM items WHERE state IN ${sqlList(inPhase('upload', 'create', 'running', 'paid'))}`,
  ).get({ steps: stepCount });
  return Math.max(0, r?.n ?? 0);
}

/** A photo reaching a state that `run --json` reports, as the transitions table recorded it. */
export interface PhotoTransition {
  /** The transition's id: events are read in this order, each once. */
  readonly id: number;
  readonly itemId: number;
  readonly state: 'done' | 'failed' | 'held' | 'skipped';
  readonly atMs: number;
  /** The photo's label: its path under input.dir (or a URL input's name). */
  readonly path: string;
  readonly stepIndex: number;
  /** Why it failed, was held or skipped (items.reason, else the transition's note). */
  readonly reason: string | null;
  readonly requestId: string | null;
  readonly taskId: string | null;
}

/**
 * The run's photo events come from the ledger's transitions, not from the stages: every
 * state change of a photo is one row there, written in the same transaction as the change,
 * so a reader that follows the rows by id sees each outcome exactly once and never one that
 * did not happen.
 */
export class PhotoEvents {
  constructor(private readonly db: Database.Database) {}

  /** The newest transition's id (0 when none): a run reports what comes after it. */
  lastId(): number {
    return stmt<[], { id: number | null }>(this.db, 'SELECT MAX(id) AS id FROM transitions').get()?.id ?? 0;
  }

  /** Photos that reached done, failed, held or skipped after transition `afterId`, oldest first. */
  since(afterId: number, limit = 1000): PhotoTransition[] {
    return stmt<[number, number], PhotoTransition>(
      this.db,
      `SELECT t.id AS id, t.item_id AS itemId, t.to_state AS state, t.at_ms AS atMs, i.rel_path AS path,
              i.step_index AS stepIndex, COALESCE(i.reason, t.note) AS reason, i.request_id AS requestId, i.task_id AS taskId
       FROM transitions t JOIN items i ON i.id = t.item_id
       WHERE t.id > ? AND t.to_state IN ('done', 'failed', 'held', 'skipped')
       ORDER BY t.id LIMIT ?`,
    ).all(afterId, limit);
  }
}
