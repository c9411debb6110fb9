import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { measure } from '../../bench/scale/commands.js';
import { alignSchema, seedArchive, type ScaleArchive } from '../../bench/scale/seed.js';

/**
 * `npm run bench:scale` in small: an archive of 600 photos seeded as the bench seeds a
 * million (bench/scale/seed.ts), and each command timed through the built CLI with its peak
 * memory, as the bench times them.
 */
const BIN = fileURLToPath(new URL('../../bin/darkroom.js', import.meta.url));
let dir: string;
let a: ScaleArchive;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'darkroom-scale-'));
  a = await seedArchive(600, { dir: path.join(dir, 'archive'), inputs: true });
  alignSchema(a.ledger, BIN);
}, 120_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('bench:scale, small', () => {
  it('seeds an archive of every kind of photo in nested folders', () => {
    const c = a.counts;
    expect(c.names).toBe(600);
    expect(c.done).toBeGreaterThan(450);
    for (const k of ['failed', 'held', 'skipped', 'pending', 'accepted', 'rejected'] as const) expect(c[k], k).toBeGreaterThan(0);
  });

  // Not the watch: four frames are 6 s of waiting.
  it.each(['status', 'plan', 'manifest', 'report-bare', 'review'] as const)(
    'times %s and reads its peak memory',
    async (command) => {
      const f = await measure(BIN, a, command, 60_000);
      expect(f.wallS, f.note).not.toBeNull();
      expect(f.peakMb).toBeGreaterThan(20);
      if (command === 'plan') expect(f.note).toBe('600 inputs found');
      if (command === 'manifest') expect(f.note).toMatch(/^\d+ files listed, \d+ hashed now, 0 missing$/);
    },
    90_000,
  );
});
