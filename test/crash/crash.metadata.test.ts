import { describe, expect, it } from 'vitest';
import { crashTest, formatCrashReport } from './harness.js';

/**
 * Outputs with their inputs' metadata under kill -9: 24 photos carrying dates, captions,
 * keywords, GPS and thumbnails (harness.ts writes them with ExifTool), a fast service with
 * no faults, at least 6 SIGKILLs at every phase (the write of the metadata included: a kill
 * between ExifTool's file and its rename is the `download` phase), then reruns to the end.
 * Every output must be whole, decode to the clean run's pixels and carry its metadata; no
 * temp file and no ExifTool process may be left behind.
 */
describe("the crash test with the inputs' metadata", () => {
  it('survives 6 SIGKILLs over 24 rich photos: every output whole, with its metadata, no temp file, no ExifTool left', async () => {
    const r = await crashTest({
      photos: 24,
      kills: 6,
      seed: 11,
      latencyMs: 150,
      faults: 'none',
      runTimeoutMs: 60_000,
      pollCapMinutes: 0.5,
    });
    const text = formatCrashReport(r);
    process.stdout.write(`${text}\n`);
    expect(r.kills).toBeGreaterThanOrEqual(6);
    expect(r.mismatches, text).toEqual([]);
    expect(r.problems, text).toEqual([]);
    expect(r.tempFilesLeft).toBe(0);
    expect(r.orphans).toBe(0);
    expect(r.integrity).toBe('ok');
    expect(r.windows.violations, text).toBe(0);
  }, 200_000);
});
