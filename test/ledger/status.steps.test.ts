import { describe, expect, it } from 'vitest';
import { Ledger, type ItemState } from '../../src/ledger/index.js';
import { discovered, putAt } from '../helpers/discovered.js';

/** Where photos stand per step, read from the ledger alone (status --json "steps"). */
describe('status: progress per step', () => {
  it('counts each photo as done, working, waiting, failed or held for every step', () => {
    const l = Ledger.open(':memory:');
    l.setMeta('pipeline', JSON.stringify(['restore', 'colorize', 'upscale']));
    discovered(
      l,
      Array.from({ length: 7 }, (_, i) => `p${i}.jpg`),
    );
    // Each photo taken there through the ledger's API, every move checked and recorded.
    const put = (id: number, step: number, state: ItemState) => putAt(l, id, step, state, 3);
    put(1, 0, 'queued'); // still to upload
    put(2, 0, 'active'); // restoring
    put(3, 1, 'uploaded'); // restored, waiting for its colorize create
    put(4, 1, 'failed'); // colorize failed for good
    put(5, 2, 'held'); // upscale create outcome unknown
    put(6, 2, 'downloading'); // upscaled, being saved
    put(7, 2, 'done');
    const steps = l.status().steps;
    expect(steps).toEqual([
      { step: 0, capability: 'restore', done: 5, working: 2, waiting: 0, failed: 0, held: 0, running: 1 },
      { step: 1, capability: 'colorize', done: 3, working: 1, waiting: 2, failed: 1, held: 0, running: 0 },
      { step: 2, capability: 'upscale', done: 2, working: 0, waiting: 3, failed: 0, held: 1, running: 0 },
    ]);
  });

  it('lists one step for a ledger that recorded no pipeline', () => {
    const l = Ledger.open(':memory:');
    expect(l.status().steps).toEqual([{ step: 0, capability: null, done: 0, working: 0, waiting: 0, failed: 0, held: 0, running: 0 }]);
  });
});
