import type Database from 'better-sqlite3';
import { clock } from '../clock.js';
import type { ItemPatch, ItemRow } from './rows.js';
import { stmt } from './statements.js';
import { assertTransition, type ItemState } from './transitions.js';

const PATCHABLE = new Set([
  'src_path', 'size_bytes', 'content_hash', 'step_index', 'attempt', 'key_fp', 'image_url', 'input_url', 'task_id',
  'business_type', 'task_started_ms', 'result_url', 'output_path', 'reason', 'request_id', 'due_ms', 'retries',
]);

export class StaleStateError extends Error {
  override readonly name = 'StaleStateError';
  readonly code = 'DARKROOM_STALE_STATE';
  constructor(id: number, expected: ItemState, actual: string | undefined) {
    super(`item ${id} was expected in state ${expected} but is ${actual ?? 'missing'}`);
  }
}

export interface Discovered {
  readonly relPath: string;
  readonly srcPath: string;
  readonly sizeBytes: number;
  /** Refused before any call is spent (not an image, empty, too large): recorded as skipped. */
  readonly skipReason?: string | null;
}

/** Item reads and the one guarded write every state change goes through. */
export class Items {
  private readonly byId;
  private readonly insertTransition;
  private readonly insertItem;

  constructor(private readonly db: Database.Database) {
    this.byId = db.prepare<[number], ItemRow>('SELECT * FROM items WHERE id = ?');
    this.insertTransition = db.prepare(
      'INSERT INTO transitions (item_id, at_ms, from_state, to_state, note) VALUES (?, ?, ?, ?, ?)',
    );
    this.insertItem = db.prepare(
      `INSERT INTO items (rel_path, src_path, size_bytes, state, created_ms, updated_ms)
       VALUES (?, ?, ?, 'queued', ?, ?) ON CONFLICT (rel_path) DO NOTHING`,
    );
  }

  get(id: number): ItemRow | undefined {
    return this.byId.get(id);
  }

  /** Record discovered inputs; already known paths are left as they are (a rerun resumes). */
  addDiscovered(list: readonly Discovered[]): { added: number; known: number } {
    const now = clock.now();
    let added = 0;
    this.db.transaction(() => {
      for (const d of list) {
        const r = this.insertItem.run(d.relPath, d.srcPath, d.sizeBytes, now, now);
        if (r.changes === 1) {
          added++;
          const id = Number(r.lastInsertRowid);
          this.insertTransition.run(id, now, null, 'queued', null);
          if (d.skipReason) this.move(id, 'queued', 'skipped', { reason: d.skipReason }, d.skipReason);
        }
      }
    })();
    return { added, known: list.length - added };
  }

  /**
   * Move an item from `from` to `to`, checked against the transition table and guarded
   * by the state it is expected in. Callers wanting atomicity with other writes wrap
   * this in their own transaction (better-sqlite3 nests them as savepoints).
   */
  move(id: number, from: ItemState, to: ItemState, patch: ItemPatch = {}, note: string | null = null): ItemRow {
    assertTransition(from, to);
    const now = clock.now();
    const keys = Object.keys(patch).filter((k) => PATCHABLE.has(k));
    const sets = ['state = @to', 'updated_ms = @now', ...keys.map((k) => `${k} = @${k}`)].join(', ');
    const params: Record<string, unknown> = { id, from, to, now };
    for (const k of keys) params[k] = (patch as Record<string, unknown>)[k] ?? null;
    return this.db.transaction(() => {
      const r = stmt(this.db, `UPDATE items SET ${sets} WHERE id = @id AND state = @from`).run(params);
      if (r.changes !== 1) throw new StaleStateError(id, from, this.get(id)?.state);
      this.insertTransition.run(id, now, from, to, note);
      return this.get(id)!;
    })();
  }

  /** Update fields without a state change (poll bookkeeping), guarded by the state. */
  patch(id: number, state: ItemState, patch: ItemPatch): void {
    const keys = Object.keys(patch).filter((k) => PATCHABLE.has(k));
    if (keys.length === 0) return;
    const sets = [...keys.map((k) => `${k} = @${k}`), 'updated_ms = @now'].join(', ');
    const params: Record<string, unknown> = { id, state, now: clock.now() };
    for (const k of keys) params[k] = (patch as Record<string, unknown>)[k] ?? null;
    const r = stmt(this.db, `UPDATE items SET ${sets} WHERE id = @id AND state = @state`).run(params);
    if (r.changes !== 1) throw new StaleStateError(id, state, this.get(id)?.state);
  }

  /** The next queued item this lane may upload: unclaimed or already its own, due now. */
  nextToUpload(keyFp: string, now: number, exclude: ReadonlySet<number>): ItemRow | undefined {
    return this.firstDue(
      `SELECT * FROM items WHERE state = 'queued' AND (key_fp IS NULL OR key_fp = ?) AND due_ms <= ? ORDER BY due_ms, id LIMIT ?`,
      [keyFp, now],
      exclude,
    );
  }

  nextInState(state: ItemState, keyFp: string, now: number, exclude: ReadonlySet<number>): ItemRow | undefined {
    return this.firstDue(
      `SELECT * FROM items WHERE state = ? AND key_fp = ? AND due_ms <= ? ORDER BY due_ms, id LIMIT ?`,
      [state, keyFp, now],
      exclude,
    );
  }

  /** Earliest due time among items of a lane in a state (or unclaimed queued ones). */
  earliestDue(state: ItemState, keyFp: string, exclude: ReadonlySet<number>): number | undefined {
    const rows = stmt<[string, string, number], { id: number; due_ms: number }>(
        this.db,
        `SELECT id, due_ms FROM items WHERE state = ? AND (key_fp = ? OR (key_fp IS NULL AND state = 'queued'))
         ORDER BY due_ms, id LIMIT ?`,
      )
      .all(state, keyFp, exclude.size + 1);
    return rows.find((r) => !exclude.has(r.id))?.due_ms;
  }

  countInStates(keyFp: string | null, states: readonly ItemState[]): number {
    const marks = states.map(() => '?').join(',');
    if (keyFp === null) {
      return (stmt(this.db, `SELECT COUNT(*) AS n FROM items WHERE state IN (${marks})`).get(...states) as { n: number }).n;
    }
    return (
      stmt(this.db, `SELECT COUNT(*) AS n FROM items WHERE key_fp = ? AND state IN (${marks})`).get(keyFp, ...states) as {
        n: number;
      }
    ).n;
  }

  /** Items not yet terminal that this lane can still act on (unclaimed queued ones count for every lane). */
  pendingFor(keyFp: string): number {
    return (
      stmt(
        this.db,
        `SELECT COUNT(*) AS n FROM items
         WHERE state NOT IN ('done', 'held', 'failed', 'skipped')
           AND (key_fp = ? OR (key_fp IS NULL AND state = 'queued'))`,
      ).get(keyFp) as { n: number }
    ).n;
  }

  inState(state: ItemState, limit = 1000): ItemRow[] {
    return this.db.prepare<[string, number], ItemRow>('SELECT * FROM items WHERE state = ? ORDER BY id LIMIT ?').all(state, limit);
  }

  all(): ItemRow[] {
    return this.db.prepare<[], ItemRow>('SELECT * FROM items ORDER BY id').all();
  }

  private firstDue(sql: string, params: unknown[], exclude: ReadonlySet<number>): ItemRow | undefined {
    const rows = stmt<unknown[], ItemRow>(this.db, sql).all(...params, exclude.size + 1);
    return rows.find((r) => !exclude.has(r.id));
  }
}
