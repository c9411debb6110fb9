import type Database from 'better-sqlite3';
import type { Items } from './items.js';
import { stmt } from './statements.js';
import type { ItemState } from './transitions.js';

/**
 * Photos whose every name has disappeared from the inputs since the last discovery: their files were deleted, moved out of input.dir, or their URL lines taken
 * out of the list. One not yet started, skipped or failed is moved to `gone`: nothing is
 * left to do for it, so it is neither pending forever nor a failure to report, and `status`
 * counts it apart. A photo that is done, held or in flight keeps its state: its output is
 * written, or money is in question, or its task runs on the service's copy.
 *
 * When a name of the same content is found again, the photo goes back to the state it was
 * gone from (a skipped photo is then looked at again like any other, a failed one waits for
 * `retry` as before), with the note BACK_NOTE.
 */

const GONE_NOTE = 'input gone';
const BACK_NOTE = 'input back';

/** The states a photo is marked gone from; it returns to the same one. */
const GONE_FROM: readonly ItemState[] = ['queued', 'skipped', 'failed'];

/**
 * Move to `gone` every photo in GONE_FROM with names recorded but none seen by discovery
 * `gen`. Items with no names at all (made before identities, or by tests) are left alone.
 */
export function markGone(db: Database.Database, items: Items, gen: number): number {
  const rows = stmt<[number], { id: number; state: ItemState }>(
    db,
    `SELECT i.id, i.state FROM items i
     WHERE i.state IN (${GONE_FROM.map((s) => `'${s}'`).join(', ')})
       AND EXISTS (SELECT 1 FROM inputs n WHERE n.item_id = i.id)
       AND NOT EXISTS (SELECT 1 FROM inputs n WHERE n.item_id = i.id AND n.seen_gen = ?)
     ORDER BY i.id`,
  ).all(gen);
  for (const r of rows) items.move(r.id, r.state, 'gone', {}, GONE_NOTE);
  return rows.length;
}

/** A gone photo found again: back to the state it was gone from. Returns whether it was gone. */
export function bringBack(db: Database.Database, items: Items, itemId: number): boolean {
  const item = items.get(itemId);
  if (item?.state !== 'gone') return false;
  const last = stmt<[number], { from_state: ItemState | null }>(
    db,
    "SELECT from_state FROM transitions WHERE item_id = ? AND to_state = 'gone' ORDER BY id DESC LIMIT 1",
  ).get(itemId);
  const to = last?.from_state && GONE_FROM.includes(last.from_state) ? last.from_state : 'queued';
  items.move(itemId, 'gone', to, to === 'queued' ? { due_ms: 0, retries: 0 } : {}, BACK_NOTE);
  return true;
}
