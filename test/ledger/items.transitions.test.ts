import { describe, expect, it } from 'vitest';
import { Ledger, canTransition } from '../../src/ledger/index.js';
import { discovered } from '../helpers/discovered.js';
import { InvalidTransitionError, StaleStateError } from '../../src/errors.js';

function ledgerWith(n: number): Ledger {
  const l = Ledger.open(':memory:');
  discovered(
    l,
    Array.from({ length: n }, (_, i) => `p${i}.jpg`),
  );
  return l;
}

describe('item transitions', () => {
  it('follow the declared table and nothing else', () => {
    expect(canTransition('queued', 'uploading')).toBe(true);
    expect(canTransition('queued', 'done')).toBe(false);
    expect(canTransition('done', 'active')).toBe(false);
    // the one way out of done: its file changed, so the new content is processed again
    expect(canTransition('done', 'queued')).toBe(true);
    const l = ledgerWith(1);
    expect(() => l.items.move(1, 'queued', 'active')).toThrow(InvalidTransitionError);
  });

  it('are guarded by the expected state, so two writers cannot both move an item', () => {
    const l = ledgerWith(1);
    l.items.move(1, 'queued', 'uploading', { key_fp: 'k_1' });
    expect(() => l.items.move(1, 'queued', 'uploading')).toThrow(StaleStateError);
    expect(l.items.get(1)!.state).toBe('uploading');
  });

  it('record every change in the transitions history', () => {
    const l = ledgerWith(1);
    l.items.move(1, 'queued', 'uploading', { key_fp: 'k_1' });
    l.items.move(1, 'uploading', 'uploaded', { input_url: 'http://x/1.jpg' });
    const db = (l as unknown as { db: import('better-sqlite3').Database }).db;
    const rows = db.prepare('SELECT from_state, to_state FROM transitions WHERE item_id = 1 ORDER BY id').all();
    expect(rows).toEqual([
      { from_state: null, to_state: 'queued' },
      { from_state: 'queued', to_state: 'uploading' },
      { from_state: 'uploading', to_state: 'uploaded' },
    ]);
  });

  it('discovery is idempotent: a rerun keeps known items as they are', () => {
    const l = ledgerWith(2);
    l.items.move(1, 'queued', 'uploading', { key_fp: 'k_1' });
    const again = discovered(l, ['p0.jpg', 'p1.jpg', 'p2.jpg', { relPath: 'bad.jpg', sizeBytes: 0, skipReason: 'empty file' }]);
    expect(again).toMatchObject({ distinct: 4, added: 2, changed: 0, gone: 0 });
    expect(l.items.get(1)!.state).toBe('uploading');
    expect(l.status().skipped).toBe(1);
    expect(l.status().problems.find((p) => p.path === 'bad.jpg')?.reason).toBe('empty file');
  });
});
