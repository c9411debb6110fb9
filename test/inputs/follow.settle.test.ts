import { afterEach, describe, expect, it } from 'vitest';
import { installClock, VirtualClock } from '../../src/clock.js';
import { Settler, type FileStamp, type SettleDeps } from '../../src/inputs/follow/settle.js';

/*
 * The settler alone, on a virtual clock, over a folder held in memory: what it takes and
 * when, what it passes over, and how much it holds at once.
 */

let restore: (() => void) | undefined;
afterEach(() => restore?.());

function harness(opts: { settleMs?: number; capacity?: number; notWhole?: (rel: string) => string | null } = {}) {
  const vc = new VirtualClock(0);
  restore = installClock(vc);
  const files = new Map<string, FileStamp>();
  const taken: { rel: string; atMs: number; stamp: FileStamp }[] = [];
  const passed: string[] = [];
  const recorded = new Set<string>();
  let most = 0;
  const deps: SettleDeps = {
    stat: async (rel) => files.get(rel) ?? null,
    list: async (dir) =>
      [...files.keys()].filter((f) => (dir === '' ? !f.includes('/') : f.startsWith(`${dir}/`) && !f.slice(dir.length + 1).includes('/'))),
    wanted: (rel) => rel.endsWith('.png'),
    known: (rel, st) => recorded.has(`${rel}:${st.size}:${st.mtimeMs}`),
    fresh: (rels) => rels.filter((rel) => ![...recorded].some((k) => k.startsWith(`${rel}:`))),
    take: async (rels, asTheyAre) => {
      const notYet: { relPath: string; reason: string }[] = [];
      for (const rel of rels) {
        const why = opts.notWhole?.(rel) ?? null;
        if (why !== null && !asTheyAre.has(rel)) {
          notYet.push({ relPath: rel, reason: why });
          continue;
        }
        const stamp = files.get(rel)!;
        recorded.add(`${rel}:${stamp.size}:${stamp.mtimeMs}`);
        taken.push({ rel, atMs: vc.now(), stamp });
      }
      return { notYet };
    },
    passedOver: (rel, why) => passed.push(`${rel}: ${why}`),
    count: (n) => (most = Math.max(most, n)),
    failed: (err) => {
      throw err;
    },
  };
  const s = new Settler(deps, { settleMs: opts.settleMs ?? 10_000, ...(opts.capacity ? { capacity: opts.capacity } : {}) });
  const write = (rel: string, size: number) => {
    files.set(rel, { size, mtimeMs: vc.now() });
    s.file(rel);
  };
  // Time goes on to `ms`, the settler's turns run on the way (a timer of ours marks the end).
  const until = (ms: number) => {
    vc.setTimer(() => {}, ms - vc.now());
    return vc.run(() => vc.now() >= ms);
  };
  return { vc, s, files, taken, passed, write, until, most: () => most };
}

describe('the settler', () => {
  it('takes a file once its size and mtime kept still for input.settle, and not before', async () => {
    const h = harness();
    for (let t = 0; t <= 30_000; t += 5_000) {
      await h.until(t);
      h.write('a.png', 1000 + t);
    }
    await h.until(39_000);
    expect(h.taken).toEqual([]);
    await h.until(41_000);
    expect(h.taken.map((t) => t.rel)).toEqual(['a.png']);
    expect(h.taken[0]!.stamp.size).toBe(31_000);
    expect(h.passed).toEqual(['a.png: still growing']);
    await h.until(120_000);
    expect(h.taken).toHaveLength(1);
  });

  it('forgets a file deleted while it settles, and looks again later at one that does not decode', async () => {
    let broken = true;
    const h = harness({ notWhole: (rel) => (rel === 'b.png' && broken ? 'premature end' : null) });
    h.write('gone.png', 10);
    h.write('b.png', 10);
    await h.until(5_000);
    h.files.delete('gone.png');
    h.s.file('gone.png');
    await h.until(11_000);
    expect(h.taken).toEqual([]);
    expect(h.passed).toEqual(['b.png: premature end']);
    // Looked at again after settle × 4, still the same: taken once it decodes.
    broken = false;
    await h.until(60_000);
    expect(h.taken.map((t) => t.rel)).toEqual(['b.png']);
    expect(h.s.size).toBe(0);
  });

  it('records a file that never decodes as it is after its last look (discovery then skips it)', async () => {
    const h = harness({ notWhole: () => 'not an image' });
    h.write('c.png', 10);
    await h.until(4 * 3_600_000);
    expect(h.taken.map((t) => t.rel)).toEqual(['c.png']);
    expect(h.passed.filter((p) => p.startsWith('c.png'))).toHaveLength(2);
  });

  it('holds at most its capacity of a burst; the rest wait as their folder and are all taken', async () => {
    const h = harness({ settleMs: 2_000, capacity: 100 });
    for (let i = 0; i < 2000; i++) h.write(`card/IMG_${i}.png`, 100 + i);
    await h.until(10 * 60_000);
    expect(new Set(h.taken.map((t) => t.rel)).size).toBe(2000);
    expect(h.taken).toHaveLength(2000);
    expect(h.most()).toBeLessThanOrEqual(100);
  });

  it('passes by names the job does not take, and names already recorded with this stamp', async () => {
    const h = harness({ settleMs: 1_000 });
    h.write('notes.txt', 5);
    h.write('d.png', 5);
    await h.until(5_000);
    h.s.file('d.png'); // an event on a file already taken, unchanged
    h.s.folder('');
    await h.until(10_000);
    expect(h.taken.map((t) => t.rel)).toEqual(['d.png']);
  });
});
