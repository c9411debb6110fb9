import { describe, expect, it } from 'vitest';
import { formatMetadataBench, measureMetadata } from '../../bench/metadata.js';

/**
 * The metadata bench, small, so that `npm run bench`'s metadata figures cannot rot unseen:
 * both runs finish every photo through the real CLI, with and without metadata, and the
 * step alone is measured. The figures themselves are the bench's to print, not asserted.
 */
describe('bench/metadata.ts, reduced', () => {
  it('runs the same photos with metadata none and all through the CLI, and the metadata step alone', async () => {
    const b = await measureMetadata({ photos: 12, rounds: 1 });
    expect(b.runs.map((r) => [r.metadata, r.exitCode])).toEqual([
      ['none', 0],
      ['all', 0],
    ]);
    expect(b.runs.every((r) => r.wallS > 0)).toBe(true);
    expect(b.filesPerSecond.serial).toBeGreaterThan(0);
    expect(formatMetadataBench(b)).toMatch(/^wall with metadata ÷ without: \d+\.\d\d/m);
  }, 120_000);
});
