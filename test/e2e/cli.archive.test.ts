import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { fingerprintKey } from '../../src/spec/key.js';
import { startSim, type RunningSim } from '../../src/sim/server.js';
import { runCli, type CliResult } from '../helpers/cli.js';
import { listenLocal } from '../helpers/http.js';
import { filesUnder, makeTempDir } from '../helpers/job.js';
import { pixelPrint } from '../helpers/metadata.js';
import { testRaw, write16BitPng, writeBmp, writeRotatedJpeg, writeTiff } from '../inputs/images.js';

/**
 * Three keys: files are claimed by whichever lane uploads them, URL inputs are given to a
 * lane at discovery (they have no upload to claim them): with the work spread over lanes,
 * each photo must still be uploaded once and created once a step.
 */
const KEYS = ['e2e-archive-key-5b8d1e0c7a', 'e2e-archive-key-93f0a61c2e', 'e2e-archive-key-0c4b7d29f1'];
const ENV = { K1: KEYS[0]!, K2: KEYS[1]!, K3: KEYS[2]! };

/** Photos that already live on the web: a tiny server on 127.0.0.1, counting what is fetched. */
async function imageHost(
  images: Record<string, Buffer>,
): Promise<{ origin: string; hits: Map<string, number>; close: () => Promise<void> }> {
  const hits = new Map<string, number>();
  const server = await listenLocal((req, res) => {
    const body = images[req.url ?? ''];
    hits.set(req.url ?? '', (hits.get(req.url ?? '') ?? 0) + 1);
    if (!body) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': req.url!.endsWith('.png') ? 'image/png' : 'image/jpeg', 'content-length': body.length });
    res.end(body);
  });
  return { origin: server.origin, hits, close: server.close };
}

async function rgba(file: string, x: number, y: number): Promise<number[]> {
  const { data, info } = await sharp(file).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  const i = (y * info.width + x) * 4;
  return [data[i]!, data[i + 1]!, data[i + 2]!, data[i + 3]!];
}

/**
 * Issue 5's "done when": an archive job, run by the real CLI against the simulator over
 * loopback — a three-step pipeline (restore → upscale 4K → remove background) over a tree
 * of TIFF, BMP, 16-bit PNG, a sideways phone photo, duplicates and Unicode names, plus a
 * CSV of public URLs.
 */
describe('darkroom run on an archive job, end to end', () => {
  let sim: RunningSim;
  let host: Awaited<ReturnType<typeof imageHost>>;
  let dir: string;
  let out: string;
  let first: CliResult;
  /** Output (relative to out/) → the size of the picture that went in, upright. */
  const expected = new Map<string, { width: number; height: number }>();

  beforeAll(async () => {
    dir = makeTempDir('darkroom-archive-');
    const photos = path.join(dir, 'photos');
    out = path.join(dir, 'restored');
    const p = (rel: string) => path.join(photos, rel);
    await writeTiff(p('scans/1950s/wedding.tif'), 48, 32);
    mkdirSync(p('scans/1950s/copies'), { recursive: true });
    copyFileSync(p('scans/1950s/wedding.tif'), p('scans/1950s/copies/wedding (copy).tif'));
    writeBmp(p('scans/letter.BMP'), 40, 24);
    await write16BitPng(p('deep scan.png'), 36, 28);
    await writeRotatedJpeg(p('phone/IMG_0001.jpg'), 40, 30);
    mkdirSync(p('family/Zoë & 写真'), { recursive: true });
    await sharp(testRaw(44, 30), { raw: { width: 44, height: 30, channels: 3 } })
      .jpeg({ quality: 95 })
      .toFile(p('family/Zoë & 写真/Ölgemälde.jpg'));
    copyFileSync(p('family/Zoë & 写真/Ölgemälde.jpg'), p('family/Ölgemälde – Kopie.jpg'));
    for (const [rel, size] of [
      ['scans/1950s/wedding.png', { width: 48, height: 32 }],
      ['scans/1950s/copies/wedding (copy).png', { width: 48, height: 32 }],
      ['scans/letter.png', { width: 40, height: 24 }],
      ['deep scan.png', { width: 36, height: 28 }],
      ['phone/IMG_0001.png', { width: 30, height: 40 }], // turned upright before upload
      ['family/Zoë & 写真/Ölgemälde.png', { width: 44, height: 30 }],
      ['family/Ölgemälde – Kopie.png', { width: 44, height: 30 }],
    ] as const) {
      expected.set(rel, size);
    }

    host = await imageHost({
      '/img/harbour.jpg': await sharp(testRaw(50, 34), { raw: { width: 50, height: 34, channels: 3 } })
        .jpeg()
        .toBuffer(),
      '/img/portrait.png': await sharp(testRaw(26, 38), { raw: { width: 26, height: 38, channels: 3 } })
        .png()
        .toBuffer(),
    });
    writeFileSync(
      path.join(dir, 'web.csv'),
      [
        'url,name,notes',
        `${host.origin}/img/harbour.jpg,web/harbour,"taken 1962, Kiel"`,
        `${host.origin}/img/portrait.png,,`,
        `${host.origin}/img/harbour.jpg,web/harbour again,same photo twice in the list`,
      ].join('\n'),
    );
    expected.set('web/harbour.png', { width: 50, height: 34 });
    expected.set('web/harbour again.png', { width: 50, height: 34 });
    expected.set('portrait.png', { width: 26, height: 38 });

    writeFileSync(
      path.join(dir, 'jobs.yaml'),
      stringify({
        service: {
          keys: [{ apiKeyEnv: 'K1' }, { apiKeyEnv: 'K2' }, { apiKeyEnv: 'K3' }],
          businessTypes: { 'remove-background': 'REMOVE_BACKGROUND' },
        },
        input: { dir: './photos', urls: './web.csv' },
        output: { dir: './restored', sidecar: true },
        steps: [
          { capability: 'restore' },
          { capability: 'upscale', resolution: '4K', mode: 'general' },
          { capability: 'remove-background' },
        ],
        ledger: './state/darkroom.db',
      }),
    );
    sim = await startSim({ keys: KEYS, seed: 11, latency: { medianMs: 400, sigma: 0.3 } });
    first = await runCli(['run', path.join(dir, 'jobs.yaml'), '--base-url', sim.apiUrl, '--quiet'], ENV, { timeoutMs: 150_000 });
  }, 180_000);

  afterAll(async () => {
    await sim?.close();
    await host?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('finishes every distinct photo, each once', () => {
    expect(first.stderr).not.toMatch(/unexpected error/);
    expect(first.code).toBe(0);
    // 5 distinct files (2 of them found twice) and 2 distinct URLs (one listed twice)
    expect(first.stdout).toMatch(/7 total · 7 done · 0 failed · 0 held · 0 pending/);
  });

  it("writes an output under every name, mirrored, a PNG (the last step's real type) two times the size, with the background cut out", async () => {
    const files = filesUnder(out).filter((f) => !f.endsWith('.json'));
    expect(files).toEqual([...expected.keys()].sort());
    for (const [rel, size] of expected) {
      const file = path.join(out, rel);
      const meta = await sharp(file).metadata();
      expect(meta.format, rel).toBe('png');
      expect([meta.width, meta.height], rel).toEqual([size.width * 2, size.height * 2]);
      expect(meta.hasAlpha, rel).toBe(true);
      // the top-left block is the background colour, so it is gone; the far corner is kept
      expect((await rgba(file, 1, 1))[3], rel).toBe(0);
      expect((await rgba(file, size.width * 2 - 4, size.height * 2 - 2))[3], rel).toBe(255);
    }
    // duplicates carry the same result: the same pixels (each names its own original in its metadata)
    expect(await pixelPrint(path.join(out, 'scans/1950s/wedding.png'))).toBe(
      await pixelPrint(path.join(out, 'scans/1950s/copies/wedding (copy).png')),
    );
    expect(await pixelPrint(path.join(out, 'web/harbour.png'))).toBe(await pixelPrint(path.join(out, 'web/harbour again.png')));
  });

  it('uploads each distinct local photo once and nothing for URL inputs; three creates per photo; the URL fetched by the service once', () => {
    const audit = sim.model.audit();
    const keys = KEYS.map((key) => audit.keys[fingerprintKey(key)]!);
    const sum = (f: (k: (typeof keys)[number]) => number) => keys.reduce((a, k) => a + f(k), 0);
    expect(sum((k) => k.uploads)).toBe(5);
    expect(Object.values(audit.uploadsPerSource)).toEqual([1, 1, 1, 1, 1]);
    const creates = Object.entries(audit.createsPerSource);
    expect(creates).toHaveLength(7);
    expect(creates.every(([, n]) => n === 3)).toBe(true);
    expect(creates.filter(([s]) => s.startsWith('url:'))).toHaveLength(2);
    expect(sum((k) => k.creates)).toBe(21);
    for (const k of keys) {
      expect(k.rejected429).toBe(0);
      expect(k.maxActiveTasks).toBeLessThanOrEqual(3);
    }
    expect(audit.keyLeaks).toEqual([]);
    expect(host.hits.get('/img/harbour.jpg')).toBe(1);
    expect(host.hits.get('/img/portrait.png')).toBe(1);
  });

  it('leaves every source file as it was', () => {
    const photos = path.join(dir, 'photos');
    expect(filesUnder(photos)).toEqual(
      [
        'deep scan.png',
        'family/Zoë & 写真/Ölgemälde.jpg',
        'family/Ölgemälde – Kopie.jpg',
        'phone/IMG_0001.jpg',
        'scans/1950s/copies/wedding (copy).tif',
        'scans/1950s/wedding.tif',
        'scans/letter.BMP',
      ].sort(),
    );
    expect(readFileSync(path.join(photos, 'scans/1950s/wedding.tif')).subarray(0, 4)).toEqual(Buffer.from([0x49, 0x49, 0x2a, 0x00]));
  });

  it('writes a sidecar beside each output: source hash, the three steps with task ids and timings', () => {
    const car = JSON.parse(readFileSync(path.join(out, 'scans/1950s/copies/wedding (copy).png.json'), 'utf8'));
    const sha = createHash('sha256')
      .update(readFileSync(path.join(dir, 'photos/scans/1950s/wedding.tif')))
      .digest('hex');
    expect(car).toMatchObject({
      output: 'scans/1950s/copies/wedding (copy).png',
      type: 'png',
      source: { kind: 'file', name: 'scans/1950s/copies/wedding (copy).tif', sha256: sha },
      sameContent: ['scans/1950s/copies/wedding (copy).tif', 'scans/1950s/wedding.tif'],
    });
    expect(car.steps.map((s: { capability: string; businessType: string }) => [s.capability, s.businessType])).toEqual([
      ['restore', 'RESTORE'],
      ['upscale', 'UPSCALE'],
      ['remove-background', 'REMOVE_BACKGROUND'],
    ]);
    for (const s of car.steps) expect(s.durationMs).toBeGreaterThan(0);
    const web = JSON.parse(readFileSync(path.join(out, 'web/harbour again.png.json'), 'utf8'));
    expect(web.source).toEqual({ kind: 'url', name: 'web/harbour again', url: `${host.origin}/img/harbour.jpg` });
  });

  it('does nothing when run again, and status reads the same', async () => {
    const calls = () => KEYS.reduce((a, key) => a + sim.model.audit().keys[fingerprintKey(key)]!.calls, 0);
    const before = calls();
    const again = await runCli(['run', path.join(dir, 'jobs.yaml'), '--base-url', sim.apiUrl, '--quiet'], ENV);
    expect(again.code).toBe(0);
    expect(calls()).toBe(before);
    const s = await runCli(['status', path.join(dir, 'jobs.yaml'), '--json']);
    expect(JSON.parse(s.stdout)).toMatchObject({ total: 7, done: 7, failed: 0, held: 0, pending: 0 });
  });
});
