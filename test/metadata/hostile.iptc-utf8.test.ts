import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { makeJob } from '../helpers/job.js';
import { Exif, solid } from '../helpers/metadata.js';
import { simulate } from '../helpers/simulate.js';

/**
 * Hostile archive: IPTC written as UTF-8 (CodedCharacterSet 1:90 = ESC % G, as Photo
 * Mechanic, Lightroom, digiKam and ExifTool itself write it) in scripts Latin-1 cannot
 * hold. A JPEG output has a place for IPTC, so the fields must arrive as they were, not as
 * "???? ? ?????": ExifTool writes IPTC as Latin-1 unless told otherwise, and -all:all does
 * not carry CodedCharacterSet (it even warns "Some character(s) could not be encoded in
 * Latin", which darkroom drops because the warning names the service's file).
 */
const exif = new Exif();
const cleanups: (() => void)[] = [];
afterAll(async () => {
  while (cleanups.length) cleanups.pop()!();
  await exif.end();
});

const CAPTION = 'שלום 👋 مرحبا — Ελλάδα 東京 Москва';
const CITY = 'Αθήνα';
const KEYWORDS = ['東京', 'Москва'];

describe('IPTC in UTF-8 on a JPEG output', () => {
  for (const level of ['all', 'basic'] as const) {
    it(`keeps non-Latin IPTC caption, city and keywords intact (output.metadata: ${level})`, async () => {
      const job = await makeJob({ photos: 0, steps: [{ capability: 'restore' }], extra: { output: { dir: './out', metadata: level } } });
      cleanups.push(job.cleanup);
      const file = path.join(job.inputDir, 'utf8-iptc.jpg');
      await solid(file, 64, 48, [120, 80, 60], 'jpeg');
      await exif.write(file, [
        '-IPTC:CodedCharacterSet=UTF8',
        `-IPTC:Caption-Abstract=${CAPTION}`,
        `-IPTC:City=${CITY}`,
        ...KEYWORDS.map((k) => `-IPTC:Keywords=${k}`),
      ]);
      const input = await exif.read(file);
      // The input is as a photo manager leaves it: ExifTool reads it back intact.
      expect(input['IPTC:Caption-Abstract']).toBe(CAPTION);

      // A service that strips metadata (results re-encoded by sharp), as most do.
      const sim = await simulate({ job, sim: { processing: 'sharp' } });
      cleanups.push(() => sim.ledger.close());
      const item = sim.ledger.items.all()[0]!;
      expect(item.state).toBe('done');
      const out = await exif.read(item.output_path!);
      expect(out['IPTC:Caption-Abstract']).toBe(CAPTION);
      if (level === 'all') expect(out['IPTC:City']).toBe(CITY);
      expect(out['IPTC:Keywords']).toEqual(KEYWORDS);
    });
  }
});
