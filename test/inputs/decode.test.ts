import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import { decodeWhole } from '../../src/inputs/decode.js';
import { discoverFiles } from '../../src/inputs/discover.js';
import { sha256 } from '../../src/inputs/read.js';
import { makeTempDir, writePhoto } from '../helpers/job.js';
import { corruptZlibPng, truncatedJpeg } from './damaged.js';
import { encodeBmp, testRaw, write16BitPng, writeRotatedJpeg, writeTiff } from './images.js';

const dir = makeTempDir('darkroom-decode-');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const LIMIT = 100_000_000;
const noise = (w: number, h: number) => {
  const raw = Buffer.alloc(w * h * 3);
  for (let i = 0; i < raw.length; i++) raw[i] = (i * 2654435761) >>> 24;
  return sharp(raw, { raw: { width: w, height: h, channels: 3 } });
};
const cut = (b: Buffer, share = 0.6) => b.subarray(0, Math.floor(b.length * share));
const withEoi = (b: Buffer) => Buffer.concat([cut(b), Buffer.from([0xff, 0xd9])]);

describe('decodeWhole (every byte of compressed data decoded)', () => {
  it('passes whole images of every kind darkroom reads, small (raw) and large (through a shrink)', async () => {
    const f = (name: string) => path.join(dir, 'good', name);
    await writePhoto(f('a.jpg'), 1);
    await writePhoto(f('a.png'), 2, 'png');
    await writePhoto(f('a.webp'), 3, 'webp');
    await write16BitPng(f('deep.png'), 40, 30);
    await writeTiff(f('scan.tif'), 60, 40, { sixteen: true });
    await writeRotatedJpeg(f('phone.jpg'), 40, 30);
    const cases: [string, Buffer, 'jpeg' | 'png' | 'webp' | 'tiff' | 'bmp', number][] = [
      ['jpg', readFileSync(f('a.jpg')), 'jpeg', 48 * 32],
      ['png', readFileSync(f('a.png')), 'png', 56 * 40],
      ['webp', readFileSync(f('a.webp')), 'webp', 64 * 32],
      ['16-bit png', readFileSync(f('deep.png')), 'png', 1200],
      ['16-bit tiff', readFileSync(f('scan.tif')), 'tiff', 2400],
      ['EXIF-rotated jpg', readFileSync(f('phone.jpg')), 'jpeg', 1200],
      ['bmp', encodeBmp(testRaw(30, 20), 30, 20, 3), 'bmp', 600],
      ['progressive jpg', await noise(200, 150).jpeg({ progressive: true }).toBuffer(), 'jpeg', 30_000],
      ['interlaced png', await noise(200, 150).png({ progressive: true }).toBuffer(), 'png', 30_000],
      ['1.9 Mpx jpg', await noise(1600, 1200).jpeg().toBuffer(), 'jpeg', 1600 * 1200],
      ['1.9 Mpx png', await noise(1600, 1200).png({ compressionLevel: 1 }).toBuffer(), 'png', 1600 * 1200],
    ];
    for (const [what, bytes, type, pixels] of cases) expect(await decodeWhole(bytes, type, pixels, LIMIT), what).toBeNull();
    // From the file, as discovery decodes a large one, and with its size unknown.
    expect(await decodeWhole(f('scan.tif'), 'tiff', null, LIMIT)).toBeNull();
  });

  it('refuses damaged data that every structural test passes, by the raw path and the shrink path alike', async () => {
    const bigJpeg = await noise(1600, 1200).jpeg().toBuffer();
    const bigProgressive = await noise(1600, 1200).jpeg({ progressive: true }).toBuffer();
    const webp = await noise(300, 200).webp({ quality: 90 }).toBuffer();
    const tiff = await noise(300, 200).tiff({ compression: 'lzw' }).toBuffer();
    const bmp = encodeBmp(testRaw(30, 20), 30, 20, 3);
    const cases: [string, Buffer, 'jpeg' | 'png' | 'webp' | 'tiff' | 'bmp', number | null, RegExp][] = [
      ['corrupt zlib png', await corruptZlibPng(), 'png', 120 * 90, /^truncated or damaged PNG \(.*libspng/],
      ['corrupt zlib png, large', await corruptZlibPng(1300, 1000), 'png', 1300 * 1000, /^truncated or damaged PNG \(/],
      ['truncated jpg ended with EOI', await truncatedJpeg(), 'jpeg', 160 * 120, /^truncated or damaged JPG \(.*premature end/i],
      ['the same, large (DCT-scaled decode)', withEoi(bigJpeg), 'jpeg', 1600 * 1200, /^truncated or damaged JPG \(.*premature end/i],
      ['progressive jpg cut short', cut(bigProgressive), 'jpeg', 1600 * 1200, /^truncated or damaged JPG \(/],
      ['webp cut short', cut(webp), 'webp', null, /^truncated or damaged WEBP \(/],
      ['tiff cut short', cut(tiff, 0.5), 'tiff', null, /^truncated or damaged TIFF \(/],
      [
        'bmp cut short',
        cut(bmp),
        'bmp',
        600,
        /^truncated or damaged BMP \(BMP pixel data is cut off\); replace it with a whole copy, which the next run checks again$/,
      ],
    ];
    for (const [what, bytes, type, pixels, reason] of cases) expect(await decodeWhole(bytes, type, pixels, LIMIT), what).toMatch(reason);
  });

  it('refuses an image larger than its header said, at the limit', async () => {
    const png = await noise(200, 150).png().toBuffer();
    expect(await decodeWhole(png, 'png', null, 10_000)).toBe(
      'over limits.maxInputPixels (10000) once decoded, though its header said less; scale it down, or raise limits.maxInputPixels',
    );
  });
});

describe('discoverFiles: decodes, their cache, hidden files', () => {
  it('decodes each new content once, takes a known verdict without decoding, and counts the hidden files it leaves out', async () => {
    const root = path.join(dir, 'tree');
    const photos = path.join(root, 'photos');
    await writePhoto(path.join(photos, 'good.jpg'), 1);
    await writePhoto(path.join(photos, 'twin/good.jpg'), 1);
    mkdirSync(photos, { recursive: true });
    writeFileSync(path.join(photos, 'bad.png'), await corruptZlibPng());
    writeFileSync(path.join(photos, 'twin of bad.png'), await corruptZlibPng());
    await writePhoto(path.join(photos, '.hidden.jpg'), 2);
    await writePhoto(path.join(photos, '.thumbs/small.jpg'), 3);
    await writePhoto(path.join(photos, 'a/.b/c.png'), 4, 'png');
    await writePhoto(path.join(photos, '.picasaoriginals/original.jpg'), 5);
    writeFileSync(path.join(photos, '.DS_Store'), 'not a photo');
    const jobs = (extra: string) => {
      writeFileSync(
        path.join(root, 'jobs.yaml'),
        `input: { dir: ./photos${extra} }\noutput: { dir: ./out }\nsteps: [{ capability: enhance }]\n`,
      );
      return loadConfig(path.join(root, 'jobs.yaml'), { env: {} });
    };
    const names = (r: Awaited<ReturnType<typeof discoverFiles>>) => r.found.map((f) => f.relPath);

    const first = await discoverFiles(jobs(''));
    expect(names(first)).toEqual(['bad.png', 'good.jpg', 'twin of bad.png', 'twin/good.jpg']);
    expect(first.hidden).toBe(4); // .DS_Store is not a photo by the include patterns
    expect(first.decodes).toMatchObject({ decoded: 2, refused: 1, known: 2 });
    const by = Object.fromEntries(first.found.map((f) => [f.relPath, f]));
    expect(by['bad.png']!.decoded!.reason).toMatch(/^truncated or damaged PNG/);
    expect(by['twin of bad.png']).toMatchObject({ skipReason: by['bad.png']!.skipReason, decoded: null });
    expect(by['good.jpg']).toMatchObject({ skipReason: null, decoded: { reason: null } });

    // A verdict the ledger holds is taken as it is: not decoded again (here one says the damaged file is fine).
    const badHash = sha256(readFileSync(path.join(photos, 'bad.png')));
    const again = await discoverFiles(jobs(''), { decodeVerdict: (h) => (h === badHash ? null : 'refused earlier') });
    expect(again.decodes).toMatchObject({ decoded: 0, refused: 0, known: 4 });
    expect(Object.fromEntries(again.found.map((f) => [f.relPath, f.skipReason]))).toEqual({
      'bad.png': null,
      'twin of bad.png': null,
      'good.jpg': 'refused earlier',
      'twin/good.jpg': 'refused earlier',
    });

    // input.hidden: true includes them; a dot folder an include pattern names is asked for, not hidden.
    const all = await discoverFiles(jobs(', hidden: true'));
    expect(all.hidden).toBe(0);
    expect(names(all)).toEqual([
      '.hidden.jpg',
      '.picasaoriginals/original.jpg',
      '.thumbs/small.jpg',
      'a/.b/c.png',
      'bad.png',
      'good.jpg',
      'twin of bad.png',
      'twin/good.jpg',
    ]);
    const named = await discoverFiles(jobs(', include: ["**/*.jpg", ".picasaoriginals/**/*.jpg"]'));
    expect(names(named)).toEqual(['.picasaoriginals/original.jpg', 'good.jpg', 'twin/good.jpg']);
    expect(named.hidden).toBe(2);
  });
});
