import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, describe, expect, it } from 'vitest';
import { sha256 } from '../../src/inputs/read.js';
import { inspectSource, prepareUpload, sniffSource, type TranscodeOptions } from '../../src/inputs/transcode.js';
import { makeTempDir, writePhoto } from '../helpers/job.js';
import { write16BitPng, writeBmp, writeRotatedJpeg, writeTiff } from './images.js';

const dir = makeTempDir('darkroom-transcode-');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const AUTO: TranscodeOptions = { transcode: 'auto', maxPixels: null, maxUploadBytes: 20 * 1024 * 1024 };
const OFF: TranscodeOptions = { ...AUTO, transcode: 'off' };

function item(file: string) {
  return { rel_path: path.basename(file), src_path: file, content_hash: sha256(readFileSync(file)) };
}

async function prepared(file: string, opts: TranscodeOptions) {
  const p = await prepareUpload(item(file), opts);
  if (p.kind !== 'bytes') throw new Error(`expected bytes, got ${JSON.stringify(p)}`);
  return { ...p, meta: await sharp(p.bytes).metadata() };
}

describe('sniffSource', () => {
  it('tells every archive format by its bytes, whatever the name', async () => {
    const f = path.join(dir, 'sniff');
    await writeTiff(`${f}.tif`, 8, 8);
    writeBmp(`${f}.bmp`, 8, 8);
    await writePhoto(`${f}.jpg`, 1, 'jpeg');
    await writePhoto(`${f}.png`, 1, 'png');
    await writePhoto(`${f}.webp`, 1, 'webp');
    const head = (ext: string) => readFileSync(`${f}.${ext}`).subarray(0, 64);
    expect(['tif', 'bmp', 'jpg', 'png', 'webp'].map((e) => sniffSource(head(e)))).toEqual(['tiff', 'bmp', 'jpeg', 'png', 'webp']);
    expect(sniffSource(Buffer.from('GIF89a........'))).toBeNull();
    expect(sniffSource(Buffer.from('%PDF-1.7'))).toBeNull();
  });
});

describe('inspectSource (discovery: headers only)', () => {
  it('converts TIFF, BMP and 16-bit PNG when transcode is auto, and says why', async () => {
    const tif = path.join(dir, 'i', 'scan.tif');
    const bmp = path.join(dir, 'i', 'old.bmp');
    const png16 = path.join(dir, 'i', 'deep.png');
    const rotated = path.join(dir, 'i', 'phone.jpg');
    const plain = path.join(dir, 'i', 'plain.jpg');
    await writeTiff(tif, 40, 30);
    writeBmp(bmp, 40, 30);
    await write16BitPng(png16, 40, 30);
    await writeRotatedJpeg(rotated, 40, 30);
    await writePhoto(plain, 2);
    const look = (f: string, o: TranscodeOptions) => inspectSource(f, statSync(f).size, o);
    expect(await look(tif, AUTO)).toEqual({ type: 'tiff', skipReason: null, transcode: 'TIFF' });
    expect(await look(bmp, AUTO)).toEqual({ type: 'bmp', skipReason: null, transcode: 'BMP' });
    expect(await look(png16, AUTO)).toEqual({ type: 'png', skipReason: null, transcode: '16-bit PNG' });
    expect(await look(rotated, AUTO)).toEqual({ type: 'jpeg', skipReason: null, transcode: 'EXIF orientation 6' });
    expect(await look(plain, AUTO)).toEqual({ type: 'jpeg', skipReason: null, transcode: null });
    // off: what the service refuses is skipped before any call; the rest goes as it is
    expect((await look(tif, OFF)).skipReason).toMatch(/TIFF is not accepted by the service; set input.transcode: auto/);
    expect((await look(bmp, OFF)).skipReason).toMatch(/BMP is not accepted/);
    expect(await look(png16, OFF)).toEqual({ type: 'png', skipReason: null, transcode: null });
    expect(await look(rotated, OFF)).toEqual({ type: 'jpeg', skipReason: null, transcode: null });
  });

  it('scales down over maxPixels (auto) or skips (off), and measures bytes after conversion', async () => {
    const big = path.join(dir, 'm', 'big.jpg');
    await writePhoto(big, 3);
    const { width, height } = await sharp(big).metadata();
    const small = { maxPixels: Math.floor((width! * height!) / 4) };
    expect((await inspectSource(big, statSync(big).size, { ...AUTO, ...small })).transcode).toMatch(/over input.maxPixels/);
    expect((await inspectSource(big, statSync(big).size, { ...OFF, ...small })).skipReason).toMatch(/is over input.maxPixels/);
    // a file over maxUploadBytes: refused if it goes as it is, measured after conversion if converted
    const tif = path.join(dir, 'm', 'huge.tif');
    await writeTiff(tif, 200, 150);
    const size = statSync(tif).size;
    expect((await inspectSource(tif, size, { ...AUTO, maxUploadBytes: 100 })).skipReason).toBeNull();
    expect((await inspectSource(big, statSync(big).size, { ...AUTO, maxUploadBytes: 100 })).skipReason).toMatch(
      /over limits.maxUploadBytes/,
    );
  });

  it('refuses empty, unknown and damaged files with a reason', async () => {
    const empty = path.join(dir, 'e', 'empty.jpg');
    const text = path.join(dir, 'e', 'notes.tif');
    const broken = path.join(dir, 'e', 'broken.tif');
    mkdirSync(path.dirname(empty), { recursive: true });
    writeFileSync(empty, '');
    writeFileSync(text, 'these are my notes about the scans');
    writeFileSync(broken, Buffer.from([0x49, 0x49, 0x2a, 0x00, 1, 2, 3]));
    expect((await inspectSource(empty, 0, AUTO)).skipReason).toBe('empty file');
    expect((await inspectSource(text, statSync(text).size, AUTO)).skipReason).toMatch(/not a JPG, PNG, WEBP, TIFF or BMP image/);
    expect((await inspectSource(broken, statSync(broken).size, AUTO)).skipReason).toMatch(/cannot read the TIFF image/);
  });
});

describe('prepareUpload (the bytes that go to the service)', () => {
  it('converts a TIFF scan to JPEG of the same size, leaving the source untouched', async () => {
    const tif = path.join(dir, 'p', 'scan.tif');
    await writeTiff(tif, 64, 48);
    const before = readFileSync(tif);
    const p = await prepared(tif, AUTO);
    expect(p).toMatchObject({ type: 'jpeg', contentType: 'image/jpeg', filename: 'scan.jpg', transcoded: 'TIFF' });
    expect(p.meta).toMatchObject({ format: 'jpeg', width: 64, height: 48 });
    expect(readFileSync(tif).equals(before)).toBe(true);
    // the block in the top-left corner is still red
    const { data } = await sharp(p.bytes).extract({ left: 2, top: 2, width: 1, height: 1 }).raw().toBuffer({ resolveWithObject: true });
    expect(data[0]).toBeGreaterThan(200);
    expect(data[1]).toBeLessThan(60);
  });

  it('keeps alpha (PNG) for a TIFF with transparency, and 16-bit TIFFs become 8-bit', async () => {
    const tif = path.join(dir, 'p', 'alpha.tif');
    await writeTiff(tif, 32, 24, { alpha: true });
    const a = await prepared(tif, AUTO);
    expect(a).toMatchObject({ type: 'png', filename: 'alpha.png' });
    expect(a.meta.hasAlpha).toBe(true);
    const deep = path.join(dir, 'p', 'deep.tif');
    await writeTiff(deep, 32, 24, { sixteen: true });
    expect((await prepared(deep, AUTO)).meta).toMatchObject({ format: 'jpeg', depth: 'uchar' });
  });

  it('turns a 16-bit PNG into an 8-bit PNG with the same picture', async () => {
    const png = path.join(dir, 'p', 'deep.png');
    await write16BitPng(png, 20, 10);
    const p = await prepared(png, AUTO);
    expect(p).toMatchObject({ type: 'png', transcoded: '16-bit PNG' });
    expect(p.meta).toMatchObject({ width: 20, height: 10, depth: 'uchar' });
  });

  it('decodes a BMP and converts it', async () => {
    const bmp = path.join(dir, 'p', 'old.bmp');
    writeBmp(bmp, 31, 17);
    const p = await prepared(bmp, AUTO);
    expect(p).toMatchObject({ type: 'jpeg', filename: 'old.jpg', transcoded: 'BMP' });
    expect(p.meta).toMatchObject({ width: 31, height: 17 });
    const alpha = path.join(dir, 'p', 'alpha.bmp');
    writeBmp(alpha, 31, 17, { alpha: true });
    expect((await prepared(alpha, AUTO)).meta).toMatchObject({ format: 'png', hasAlpha: true });
  });

  it('applies EXIF orientation: a sideways-stored photo is sent upright, with no orientation left', async () => {
    const jpg = path.join(dir, 'p', 'phone.jpg');
    await writeRotatedJpeg(jpg, 40, 30);
    const p = await prepared(jpg, AUTO);
    expect(p.meta).toMatchObject({ width: 30, height: 40 });
    expect(p.meta.orientation ?? 1).toBe(1);
    // stored top-left (the red block) ends up top-right after a 90° clockwise turn
    const { data } = await sharp(p.bytes).extract({ left: 27, top: 2, width: 1, height: 1 }).raw().toBuffer({ resolveWithObject: true });
    expect(data[0]).toBeGreaterThan(200);
  });

  it('scales down to maxPixels keeping the aspect, and sends a plain JPEG as it is', async () => {
    const tif = path.join(dir, 'p', 'large.tif');
    await writeTiff(tif, 400, 300);
    const p = await prepared(tif, { ...AUTO, maxPixels: 30_000 });
    expect(p.meta.width! * p.meta.height!).toBeLessThanOrEqual(30_000);
    expect(p.meta.width! / p.meta.height!).toBeCloseTo(4 / 3, 1);
    expect(p.transcoded).toBe('TIFF, 400×300 over input.maxPixels');
    const jpg = path.join(dir, 'p', 'plain.jpg');
    await writePhoto(jpg, 4);
    const q = await prepareUpload(item(jpg), AUTO);
    expect(q).toMatchObject({ kind: 'bytes', transcoded: null });
    expect((q as { bytes: Buffer }).bytes.equals(readFileSync(jpg))).toBe(true);
  });

  it('skips a file that changed since discovery, and one still too large after converting', async () => {
    const jpg = path.join(dir, 'p', 'changing.jpg');
    await writePhoto(jpg, 5);
    const it0 = item(jpg);
    await writePhoto(jpg, 6);
    expect(await prepareUpload(it0, AUTO)).toEqual({
      kind: 'skip',
      reason: expect.stringMatching(/changed after it was found; run again/),
    });
    const tif = path.join(dir, 'p', 'stillbig.tif');
    await writeTiff(tif, 100, 100);
    expect(await prepareUpload(item(tif), { ...AUTO, maxUploadBytes: 200 })).toEqual({
      kind: 'skip',
      reason: expect.stringMatching(/still \d+ bytes after converting \(TIFF\), over limits.maxUploadBytes \(200\); set input.maxPixels/),
    });
  });

  it('hands a URL input back as its URL: nothing to read or upload', async () => {
    expect(
      await prepareUpload({ rel_path: 'https://x.test/a.jpg', src_path: 'https://x.test/a.jpg', content_hash: 'url:abc' }, AUTO),
    ).toEqual({
      kind: 'url',
      url: 'https://x.test/a.jpg',
    });
  });
});
