import { writeFileSync } from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { fingerprintKey } from '../../src/spec/key.js';
import { VirtualClock } from '../../src/clock.js';
import { Ledger } from '../../src/ledger/index.js';
import { SimModel } from '../../src/sim/model.js';
import { makeJob, writePhoto } from '../helpers/job.js';
import { SIM_KEY, simulate } from '../helpers/simulate.js';
import { sourceIdOf } from '../robust/helpers.js';
import { corruptZlibPng, jpegHeaderOnly, pngBomb, truncatedJpeg } from './damaged.js';

/**
 * Issue 12, point 8: every input is fully decoded, with a pixel limit read from its header
 * first, before any call is spent on it. Each damaged file here passed every check darkroom
 * made before (magic bytes, headers, the structural check at upload) and was uploaded and
 * charged for.
 */

const cleanups: (() => void)[] = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

const GOOD = ['good-1.jpg', 'good-2.png', 'sub/good-3.webp'];
const BAD = ['corrupt-zlib.png', 'bomb-70000.png', 'truncated.jpg', 'huge-280mpx.jpg'];

describe('inputs decoded in full before any call', () => {
  it('skips a corrupt zlib stream, a 70000×70000 PNG bomb, a truncated JPEG and a 280-Mpx JPEG with their reasons, at 0 calls', async () => {
    const job = await makeJob({ photos: 0, steps: [{ capability: 'enhance' }], baseUrl: 'http://sim.invalid' });
    cleanups.push(job.cleanup);
    const inp = (rel: string) => path.join(job.inputDir, rel);
    for (const [i, rel] of GOOD.entries())
      await writePhoto(inp(rel), i, rel.endsWith('.png') ? 'png' : rel.endsWith('.webp') ? 'webp' : 'jpeg');
    writeFileSync(inp('corrupt-zlib.png'), await corruptZlibPng());
    writeFileSync(inp('bomb-70000.png'), pngBomb(70_000, 70_000));
    writeFileSync(inp('truncated.jpg'), await truncatedJpeg());
    writeFileSync(inp('huge-280mpx.jpg'), jpegHeaderOnly(20_000, 14_000));

    const r = await simulate({ job });
    const reasons = Object.fromEntries(r.result.status.problems.map((p) => [p.path, `${p.state}: ${p.reason}`]));
    expect(reasons['corrupt-zlib.png']).toMatch(/^skipped: truncated or damaged PNG \(.*libspng/);
    expect(reasons['truncated.jpg']).toMatch(/^skipped: truncated or damaged JPG \(.*premature end/i);
    // Refused from the header alone: a decode would have failed on the missing data instead.
    expect(reasons['bomb-70000.png']).toBe(
      'skipped: 70000×70000 (4900 Mpx) is over limits.maxInputPixels (100000000): refused from its header, not decoded; scale it down, or raise limits.maxInputPixels',
    );
    expect(reasons['huge-280mpx.jpg']).toMatch(
      /^skipped: 20000×14000 \(280 Mpx\) is over limits\.maxInputPixels \(100000000\): refused from its header/,
    );
    expect(r.result.status).toMatchObject({ total: GOOD.length, done: GOOD.length, failed: 0, skipped: BAD.length });
    const byPath = new Map(r.ledger.items.all().map((i) => [i.rel_path, i.state]));
    for (const rel of GOOD) expect(byPath.get(rel), rel).toBe('done');

    // The simulator's audit: not an upload, not a create for any of them.
    const k = r.audit.keys[fingerprintKey(SIM_KEY)]!;
    expect(k.uploads).toBe(GOOD.length);
    for (const rel of BAD) {
      expect(r.audit.uploadsPerSource[sourceIdOf(inp(rel))], rel).toBeUndefined();
      expect(r.audit.createsPerSource[sourceIdOf(inp(rel))], rel).toBeUndefined();
    }
  });

  it('a higher limits.maxInputPixels lets a large header through to the decode, which then finds the missing data', async () => {
    const job = await makeJob({
      photos: 0,
      steps: [{ capability: 'enhance' }],
      baseUrl: 'http://sim.invalid',
      extra: { limits: { maxInputPixels: 300_000_000 } },
    });
    cleanups.push(job.cleanup);
    writeFileSync(path.join(job.inputDir, 'huge-280mpx.jpg'), jpegHeaderOnly(20_000, 14_000));
    const r = await simulate({ job });
    expect(r.result.status.problems.map((p) => `${p.path} ${p.state}: ${p.reason}`)).toEqual([
      expect.stringMatching(/^huge-280mpx\.jpg skipped: truncated or damaged JPG \(/),
    ]);
    expect(r.audit.keys[fingerprintKey(SIM_KEY)]?.uploads ?? 0).toBe(0);
  });
});

describe('decode verdicts kept by content', () => {
  it('a rerun decodes nothing already checked; a changed file is decoded again', async () => {
    const job = await makeJob({ photos: 0, steps: [{ capability: 'enhance' }], baseUrl: 'http://sim.invalid' });
    cleanups.push(job.cleanup);
    const inp = (rel: string) => path.join(job.inputDir, rel);
    await writePhoto(inp('a.jpg'), 1);
    await writePhoto(inp('b.png'), 2, 'png');
    writeFileSync(inp('bad.png'), await corruptZlibPng());
    const ledger = Ledger.open(':memory:');
    cleanups.push(() => ledger.close());
    const model = new SimModel({ keys: [SIM_KEY], seed: 1, resultOrigin: 'http://results.invalid', processing: 'passthrough' });
    const clock = new VirtualClock(Date.UTC(2026, 10, 22, 20, 0, 0));
    /** The run's own log line about decoding, through the real runner. */
    const decodedLine = async () => {
      const lines: string[] = [];
      const log = pino({ level: 'info' }, { write: (l: string) => void lines.push(l) });
      await simulate({ job, ledger, model, clock, log });
      return (JSON.parse(lines.find((l) => l.includes('inputs decoded in full'))!) as { msg: string }).msg;
    };
    expect(await decodedLine()).toMatch(/^inputs decoded in full: 3 new \(1 refused\), 0 already checked/);
    expect(await decodedLine()).toMatch(/^inputs decoded in full: 0 new \(0 refused\), 3 already checked/);
    await writePhoto(inp('b.png'), 9, 'png');
    expect(await decodedLine()).toMatch(/^inputs decoded in full: 1 new \(0 refused\), 2 already checked/);
    expect(ledger.status()).toMatchObject({ total: 2, done: 2, skipped: 1 }); // b.png's item was reset for its new content
  });
});
