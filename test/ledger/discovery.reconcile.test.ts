import { rmSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { Ledger, type FoundFile, type FoundUrl, type ItemRow, type ItemState } from '../../src/ledger/index.js';
import { migrate, readMigrations } from '../../src/ledger/sqliteFile.js';
import { urlIdentity } from '../../src/inputs/identity.js';
import { makeTempDir } from '../helpers/job.js';

const H = (c: string) => c.repeat(64).slice(0, 64);
const file = (name: string, hash: string, skipReason: string | null = null): FoundFile => ({
  name,
  src: `/photos/${name}`,
  sizeBytes: 100,
  mtimeMs: 1,
  contentHash: hash,
  skipReason,
});
const url = (u: string, name: string): FoundUrl => ({ url: u, name, contentHash: urlIdentity(u) });

function items(l: Ledger): ItemRow[] {
  return l.items.all();
}

/** Walk an item along the main line to `to` (each move checked by the transition table). */
function advance(l: Ledger, id: number, to: ItemState): void {
  const line: ItemState[] = ['queued', 'uploading', 'uploaded', 'submitting', 'active', 'succeeded', 'downloading', 'done'];
  let at = l.items.get(id)!.state;
  while (at !== to) {
    const next = line[line.indexOf(at) + 1]!;
    l.items.move(id, at, next, next === 'uploading' ? { key_fp: 'k_a' } : {});
    at = next;
  }
}

describe('Identity.reconcile: inputs by content', () => {
  it('makes one item of the same photo found under two names, and one per distinct photo', () => {
    const l = Ledger.open(':memory:');
    const r = l.discovery.reconcile([file('a.jpg', H('1')), file('copy/a.jpg', H('1')), file('b.jpg', H('2'))], [], { keyFps: [] });
    expect(r).toMatchObject({ names: 3, distinct: 2, added: 2, duplicates: 1, changed: 0 });
    expect(items(l).map((i) => [i.rel_path, i.content_hash, i.state])).toEqual([
      ['a.jpg', H('1'), 'queued'],
      ['b.jpg', H('2'), 'queued'],
    ]);
    expect(l.inputs.inputsOf(1).map((n) => n.name)).toEqual(['a.jpg', 'copy/a.jpg']);
    expect(l.status().total).toBe(2);
  });

  it('keeps a renamed photo on its item (label and source path follow), and adds nothing', () => {
    const l = Ledger.open(':memory:');
    l.discovery.reconcile([file('old name.jpg', H('1'))], [], { keyFps: [] });
    advance(l, 1, 'done');
    const r = l.discovery.reconcile([file('new name.jpg', H('1'))], [], { keyFps: [] });
    expect(r).toMatchObject({ added: 0, changed: 0, distinct: 1 });
    expect(items(l)).toHaveLength(1);
    expect(items(l)[0]).toMatchObject({ rel_path: 'new name.jpg', src_path: '/photos/new name.jpg', state: 'done' });
    expect(l.outputFiles.unwrittenOfDone().map((u) => u.input.name)).toEqual(['new name.jpg']);
  });

  it('processes a changed file again: its done item goes back to queued at step 1 with the new hash', () => {
    const l = Ledger.open(':memory:');
    l.discovery.reconcile([file('a.jpg', H('1'))], [], { keyFps: [] });
    advance(l, 1, 'done');
    const r = l.discovery.reconcile([file('a.jpg', H('2'))], [], { keyFps: [] });
    expect(r).toMatchObject({ changed: 1, added: 0 });
    expect(items(l)).toHaveLength(1);
    expect(items(l)[0]).toMatchObject({
      state: 'queued',
      content_hash: H('2'),
      step_index: 0,
      key_fp: null,
      task_id: null,
      input_url: null,
    });
  });

  it('gives a changed name a new item when its old content still has another name, moving the label', () => {
    const l = Ledger.open(':memory:');
    l.discovery.reconcile([file('a.jpg', H('1')), file('b.jpg', H('1'))], [], { keyFps: [] });
    advance(l, 1, 'done');
    l.discovery.reconcile([file('a.jpg', H('2')), file('b.jpg', H('1'))], [], { keyFps: [] });
    expect(items(l).map((i) => [i.id, i.rel_path, i.content_hash, i.state])).toEqual([
      [1, 'b.jpg', H('1'), 'done'],
      [2, 'a.jpg', H('2'), 'queued'],
    ]);
  });

  it('leaves a change for the next run while the old content is in flight (a task already paid for is finished)', () => {
    const l = Ledger.open(':memory:');
    l.discovery.reconcile([file('a.jpg', H('1'))], [], { keyFps: [] });
    advance(l, 1, 'active');
    const r = l.discovery.reconcile([file('a.jpg', H('2'))], [], { keyFps: [] });
    expect(r).toMatchObject({ deferred: 1, changed: 0, added: 0 });
    expect(items(l)).toHaveLength(1);
    expect(items(l)[0]).toMatchObject({ state: 'active', content_hash: H('1') });
    advance(l, 1, 'done');
    expect(l.discovery.reconcile([file('a.jpg', H('2'))], [], { keyFps: [] })).toMatchObject({ changed: 1 });
    expect(items(l)[0]).toMatchObject({ state: 'queued', content_hash: H('2') });
  });

  it('joins a photo whose twin is already done to that item, with no new work', () => {
    const l = Ledger.open(':memory:');
    l.discovery.reconcile([file('a.jpg', H('1'))], [], { keyFps: [] });
    advance(l, 1, 'done');
    const r = l.discovery.reconcile([file('a.jpg', H('1')), file('later copy.jpg', H('1'))], [], { keyFps: [] });
    expect(r).toMatchObject({ added: 0, duplicates: 1 });
    expect(items(l)).toHaveLength(1);
    expect(l.outputFiles.unwrittenOfDone().map((u) => u.input.name)).toEqual(['a.jpg', 'later copy.jpg']);
  });

  it('adopts the items of a version-1 ledger by path, keeping their progress', () => {
    const dir = makeTempDir('darkroom-legacy-');
    try {
      // What darkroom recorded before inputs had an identity (migration 003): an item by path, no hash.
      const ledgerFile = path.join(dir, 'darkroom.db');
      const old = new Database(ledgerFile);
      migrate(
        old,
        ledgerFile,
        readMigrations().filter((m) => m.version < 3),
      );
      old
        .prepare(
          "INSERT INTO items (rel_path, src_path, size_bytes, state, created_ms, updated_ms) VALUES ('a.jpg', '/photos/a.jpg', 100, 'queued', 0, 0)",
        )
        .run();
      old.close();
      const l = Ledger.open(ledgerFile);
      advance(l, 1, 'done');
      expect(l.discovery.reconcile([file('a.jpg', H('1'))], [], { keyFps: [] })).toMatchObject({ added: 0, changed: 0 });
      expect(items(l)).toHaveLength(1);
      expect(items(l)[0]).toMatchObject({ state: 'done', content_hash: H('1') });
      l.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('queues a skipped photo again when its reason no longer holds, and skips one not started when it does', () => {
    const l = Ledger.open(':memory:');
    l.discovery.reconcile([file('scan.tif', H('1'), 'TIFF is not accepted by the service')], [], { keyFps: [] });
    expect(items(l)[0]!.state).toBe('skipped');
    expect(l.discovery.reconcile([file('scan.tif', H('1'))], [], { keyFps: [] })).toMatchObject({ requeued: 1 });
    expect(items(l)[0]).toMatchObject({ state: 'queued', reason: null });
    l.discovery.reconcile([file('scan.tif', H('1'), 'TIFF is not accepted by the service')], [], { keyFps: [] });
    expect(items(l)[0]!.state).toBe('skipped');
  });

  it('refuses a photo only when every name of it is refused (a second link to the same file is not)', () => {
    const l = Ledger.open(':memory:');
    l.discovery.reconcile([file('a link.jpg', H('1'), 'same file as z.jpg'), file('z.jpg', H('1'))], [], { keyFps: [] });
    expect(items(l)).toHaveLength(1);
    expect(items(l)[0]!.state).toBe('queued');
  });

  it('starts URL inputs as uploaded on a lane (no upload), one item per URL, and moves them off keys no longer used', () => {
    const l = Ledger.open(':memory:');
    const u1 = 'https://x.test/1.jpg';
    const r = l.discovery.reconcile([], [url(u1, 'one'), url(u1, 'one again'), url('https://x.test/2.jpg', '2')], {
      keyFps: ['k_a', 'k_b'],
    });
    expect(r).toMatchObject({ names: 3, distinct: 2, added: 2, duplicates: 1 });
    expect(items(l).map((i) => [i.rel_path, i.state, i.key_fp, i.input_url])).toEqual([
      [u1, 'uploaded', 'k_a', u1],
      ['https://x.test/2.jpg', 'uploaded', 'k_b', 'https://x.test/2.jpg'],
    ]);
    l.discovery.reconcile([], [url(u1, 'one'), url('https://x.test/2.jpg', '2')], { keyFps: ['k_c'] });
    expect(items(l).map((i) => i.key_fp)).toEqual(['k_c', 'k_c']);
  });

  it('uses the recorded hash of a file whose size and mtime are unchanged', () => {
    const l = Ledger.open(':memory:');
    l.discovery.reconcile([file('a.jpg', H('1'))], [], { keyFps: [] });
    expect(l.inputs.cachedHash('a.jpg', 100, 1)).toBe(H('1'));
    expect(l.inputs.cachedHash('a.jpg', 100, 2)).toBeUndefined();
    expect(l.inputs.cachedHash('a.jpg', 101, 1)).toBeUndefined();
  });
});
