import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import { discover } from '../../src/inputs/discover.js';
import { sha256 } from '../../src/inputs/read.js';
import { makeTempDir, writePhoto } from '../helpers/job.js';
import { writeRotatedJpeg, writeTiff } from './images.js';

const dir = makeTempDir('darkroom-discover-');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('discover (files found, looked at and identified)', () => {
  it('identifies small and large files by their bytes, says what it will convert, and refuses what it cannot send', async () => {
    const photos = path.join(dir, 'photos');
    await writePhoto(path.join(photos, 'a/plain.jpg'), 1);
    await writePhoto(path.join(photos, 'a/plain.png'), 2, 'png');
    await writePhoto(path.join(photos, 'a/plain.webp'), 3, 'webp');
    copyFileSync(path.join(photos, 'a/plain.jpg'), path.join(photos, 'twin.jpg'));
    await writeRotatedJpeg(path.join(photos, 'a/phone.jpg'), 40, 30);
    // Over the size read whole (1 MiB): read in part for its headers, hashed as a stream.
    const noise = Buffer.alloc(900 * 700 * 3);
    for (let i = 0; i < noise.length; i++) noise[i] = (i * 2654435761) >>> 24;
    await sharp(noise, { raw: { width: 900, height: 700, channels: 3 } })
      .png({ compressionLevel: 0 })
      .toFile(path.join(photos, 'big.png'));
    await writeTiff(path.join(photos, 'scan.tif'), 600, 600, { sixteen: true });
    writeFileSync(path.join(photos, 'empty.jpg'), '');
    writeFileSync(path.join(photos, 'notes.jpg'), 'not a photo');
    mkdirSync(path.join(photos, 'out'), { recursive: true });
    writeFileSync(
      path.join(dir, 'jobs.yaml'),
      'input: { dir: ./photos }\noutput: { dir: ./photos/out }\nsteps: [{ capability: enhance }]\n',
    );
    const config = loadConfig(path.join(dir, 'jobs.yaml'), { env: {} });

    const found = await discover(config, { cachedHash: (name) => (name === 'a/plain.png' ? 'c'.repeat(64) : undefined) });
    const by = Object.fromEntries(found.map((f) => [f.relPath, f]));
    expect(found.map((f) => f.relPath)).toEqual([
      'a/phone.jpg',
      'a/plain.jpg',
      'a/plain.png',
      'a/plain.webp',
      'big.png',
      'empty.jpg',
      'notes.jpg',
      'scan.tif',
      'twin.jpg',
    ]);
    expect(readFileSync(path.join(photos, 'big.png')).length).toBeGreaterThan(1 << 20);
    for (const name of ['a/phone.jpg', 'a/plain.jpg', 'a/plain.webp', 'big.png', 'notes.jpg', 'scan.tif', 'twin.jpg']) {
      expect(by[name]!.contentHash, name).toBe(sha256(readFileSync(path.join(photos, name))));
    }
    expect(by['twin.jpg']!.contentHash).toBe(by['a/plain.jpg']!.contentHash);
    expect(by['a/plain.png']!.contentHash).toBe('c'.repeat(64)); // known: not hashed again
    expect(by['empty.jpg']).toMatchObject({ contentHash: 'empty:empty.jpg', skipReason: 'empty file' });
    expect(by['notes.jpg']!.skipReason).toMatch(/not a JPG, PNG, WEBP, TIFF or BMP image by its content/);
    expect(by['a/phone.jpg']).toMatchObject({ type: 'jpeg', transcode: 'EXIF orientation 6', skipReason: null });
    expect(by['scan.tif']).toMatchObject({ type: 'tiff', transcode: 'TIFF', skipReason: null });
    for (const name of ['a/plain.jpg', 'a/plain.png', 'a/plain.webp', 'big.png'])
      expect(by[name], name).toMatchObject({ transcode: null, skipReason: null });
    expect(by['big.png']!.sizeBytes).toBe(readFileSync(path.join(photos, 'big.png')).length);
  });
});
