/**
 * `npm run bench:review`: the review page's figures against its targets (docs/performance.md
 * § The review page), through the real CLI (`darkroom review`, a process of its own, so its
 * RSS is its own) and real HTTP on 127.0.0.1:
 * - a ledger of 10,000 done photos: the first view (the page, its script and style, the photo
 *   list, the first photo's input and output) ready under 1 s after the server printed its
 *   address; a decision's round trip under 50 ms; the server's RSS under 300 MB;
 * - a 100 MB 16-bit TIFF input: its preview made in under 3 s, then served from the cache.
 *
 *   tsx bench/review.ts [--photos N]
 */
import { spawn } from 'node:child_process';
import { linkSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type Database from 'better-sqlite3';
import sharp from 'sharp';
import { Ledger, type ItemState } from '../src/ledger/index.js';
import { discovered } from '../test/helpers/discovered.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const { values } = parseArgs({ options: { photos: { type: 'string', default: '10000' } } });
const PHOTOS = Number(values.photos);
const DONE_PATH: ItemState[] = ['queued', 'uploading', 'uploaded', 'submitting', 'active', 'succeeded', 'downloading', 'done'];
const KINDS = 24;

/** See bench/ledger.ts: one transaction for the whole build, through the Ledger's own writes. */
function inOneTransaction(ledger: Ledger, fn: () => void): void {
  (ledger as unknown as { db: Database.Database }).db.transaction(fn)();
}

async function buildJob(dir: string): Promise<{ jobs: string; tiffId: number; tiffMb: number }> {
  const input = path.join(dir, 'scans');
  const out = path.join(dir, 'restored');
  mkdirSync(input, { recursive: true });
  mkdirSync(out, { recursive: true });
  for (let k = 0; k < KINDS; k++) {
    const bg = { r: (k * 37) % 256, g: (k * 71) % 256, b: (k * 113) % 256 };
    await sharp({ create: { width: 1600, height: 1200, channels: 3, background: bg } })
      .jpeg({ quality: 85 })
      .toFile(path.join(input, `scan-${k}.jpg`));
    await sharp({ create: { width: 3200, height: 2400, channels: 3, background: bg } })
      .jpeg({ quality: 85 })
      .toFile(path.join(out, `kind-${k}.jpg`));
  }
  // A flatbed master: 5,800 × 2,900 pixels of 16-bit RGB, uncompressed, ~100 MB.
  const tiff = path.join(input, 'master-16bit.tif');
  const w = 5800;
  const h = 2900;
  const samples = new Uint16Array(w * h * 3);
  for (let i = 0; i < samples.length; i++) samples[i] = (i * 7919) & 0xffff;
  // A Uint16Array is read as 16-bit samples.
  await sharp(samples, { raw: { width: w, height: h, channels: 3 } })
    .toColourspace('rgb16')
    .tiff({ compression: 'none' })
    .toFile(tiff);
  const depth = (await sharp(tiff).metadata()).depth;
  if (depth !== 'ushort') throw new Error(`the TIFF is ${depth}, not 16-bit`);
  const tiffMb = statSync(tiff).size / 1e6;

  const ledgerFile = path.join(dir, 'darkroom.db');
  const ledger = Ledger.open(ledgerFile);
  try {
    inOneTransaction(ledger, () => {
      discovered(
        ledger,
        Array.from({ length: PHOTOS }, (_, i) => ({
          relPath: `box-${String(Math.floor(i / 100)).padStart(3, '0')}/photo-${String(i).padStart(5, '0')}.jpg`,
          srcPath: i === 1 ? tiff : path.join(input, `scan-${i % KINDS}.jpg`),
          sizeBytes: 2_000_000,
        })),
      );
      for (let id = 1; id <= PHOTOS; id++) {
        const target = path.join(out, `photo-${id}.jpg`);
        linkSync(path.join(out, `kind-${id % KINDS}.jpg`), target);
        for (let s = 1; s < DONE_PATH.length; s++) {
          ledger.items.move(
            id,
            DONE_PATH[s - 1]!,
            DONE_PATH[s]!,
            s === DONE_PATH.length - 1 ? { output_path: target } : { key_fp: 'bench' },
          );
        }
        ledger.outputFiles.recordFile({
          path: target,
          itemId: id,
          inputId: null,
          kind: 'output',
          stepIndex: 0,
          bytes: 1,
          sha256: id.toString(16).padStart(64, '0'),
          sha512: id.toString(16).padStart(128, '0'),
        });
      }
    });
  } finally {
    ledger.close();
  }
  const jobs = path.join(dir, 'jobs.yaml');
  writeFileSync(
    jobs,
    `service: { baseUrl: http://127.0.0.1:9, apiKeyEnv: BENCH_KEY }\ninput: { dir: ./scans }\noutput: { dir: ./restored }\nsteps: [{ capability: restore }]\nledger: ./darkroom.db\n`,
  );
  return { jobs, tiffId: 2, tiffMb };
}

const agent = new Agent({ keepAlive: true, maxSockets: 6 });

function http(
  port: number,
  method: string,
  p: string,
  headers: Record<string, string>,
  body?: string,
): Promise<{ status: number; bytes: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path: p, headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const all = Buffer.concat(chunks);
        resolve({
          status: res.statusCode ?? 0,
          bytes: all.length,
          text: all.length < 1e6 || p.startsWith('/api/photos?') || p === '/api/photos' ? all.toString('utf8') : '',
        });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

function memoryOf(pid: number): { rssMb: number; peakMb: number } {
  const s = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(s)?.[1] ?? 0) / 1024;
  return { rssMb: kb('VmRSS'), peakMb: kb('VmHWM') };
}

function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'darkroom-bench-review-'));
  try {
    let t = performance.now();
    const { jobs, tiffId, tiffMb } = await buildJob(dir);
    const buildS = (performance.now() - t) / 1000;

    const spawned = performance.now();
    const child = spawn(process.execPath, [path.join(ROOT, 'bin', 'darkroom.js'), 'review', jobs], { stdio: ['ignore', 'pipe', 'pipe'] });
    const line = await new Promise<string>((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.includes('\n')) resolve(out.split('\n')[0]!);
      });
      child.on('close', (code) => reject(new Error(`darkroom review ended (${code}) before its address`)));
    });
    const listening = performance.now();
    const m = /:(\d+)\/\?token=(.+)$/.exec(line)!;
    const port = Number(m[1]);
    const token = m[2]!;
    const host = { Host: `127.0.0.1:${port}` };
    const cookie = { ...host, Cookie: `darkroom-review-${port}=${token}` };

    // The first view, as a browser loads it: the address, then the page's style, script and
    // list together, then the first photo's two images together.
    t = performance.now();
    const first = await http(port, 'GET', `/?token=${token}`, host);
    if (first.status !== 303) throw new Error(`first answer ${first.status}`);
    const [, , list] = await Promise.all([
      http(port, 'GET', '/', cookie),
      http(port, 'GET', '/review.css', cookie),
      http(port, 'GET', '/api/photos', cookie).then((r) => http(port, 'GET', '/review.js', cookie).then(() => r)),
    ]);
    // The page lists a window at a time; the rest, for the decisions below, window after window (not timed).
    type Listed = { id: number; h: string; p: string };
    const firstWindow = JSON.parse(list.text) as { photos: Listed[]; more: boolean };
    const photos = [...firstWindow.photos];
    for (let more = firstWindow.more; more;) {
      const next = await http(port, 'GET', `/api/photos?after=${encodeURIComponent(photos.at(-1)!.p)}&limit=1000`, cookie);
      const w = JSON.parse(next.text) as { photos: Listed[]; more: boolean };
      photos.push(...w.photos);
      more = w.more;
    }
    if (photos.length !== PHOTOS) throw new Error(`listed ${photos.length} photos`);
    const firstId = photos[0]!.id === tiffId ? photos[1]!.id : photos[0]!.id;
    const imgs = await Promise.all([
      http(port, 'GET', `/api/photos/${firstId}/input`, cookie),
      http(port, 'GET', `/api/photos/${firstId}/output`, cookie),
    ]);
    if (imgs.some((i) => i.status !== 200)) throw new Error(`images answered ${imgs.map((i) => i.status).join(', ')}`);
    const firstViewMs = performance.now() - t;
    const listKb = list.bytes / 1024;

    // Decisions: each a POST answered after its commit (synchronous=FULL: an fsync each).
    const post = { ...cookie, Origin: `http://127.0.0.1:${port}`, 'Content-Type': 'application/json' };
    const rtts: number[] = [];
    for (let n = 0; n < 300; n++) {
      const p = photos[(n * 31) % photos.length]!;
      const action = ['accept', 'reject', 'clear'][n % 3]!;
      const body = JSON.stringify({ action, sha256: p.h, reason: action === 'reject' ? `bench ${n}` : null });
      const s = performance.now();
      const r = await http(port, 'POST', `/api/photos/${p.id}/decision`, post, body);
      rtts.push(performance.now() - s);
      if (r.status !== 200) throw new Error(`decision answered ${r.status}: ${r.text}`);
    }
    // The list again after decisions: what a page's poll costs.
    t = performance.now();
    await http(port, 'GET', '/api/photos?since=0.0', cookie);
    const pollAllMs = performance.now() - t;

    const beforeTiff = memoryOf(child.pid!);
    // The 16-bit TIFF master: its preview made, then from the cache.
    t = performance.now();
    const tiffFirst = await http(port, 'GET', `/api/photos/${tiffId}/input`, cookie);
    const tiffMakeS = (performance.now() - t) / 1000;
    t = performance.now();
    const tiffAgain = await http(port, 'GET', `/api/photos/${tiffId}/input`, cookie);
    const tiffCacheMs = performance.now() - t;
    if (tiffFirst.status !== 200 || tiffAgain.status !== 200) throw new Error('the TIFF preview failed');
    const mem = memoryOf(child.pid!);
    child.kill('SIGINT');
    await new Promise((r) => child.on('close', r));

    const rows: [string, string, string, boolean][] = [
      ['server start (spawn → address printed)', `${((listening - spawned) / 1000).toFixed(2)} s`, '—', true],
      [
        `first view (${PHOTOS.toLocaleString('en')} done photos, first window ${listKb.toFixed(0)} KB)`,
        `${(firstViewMs / 1000).toFixed(3)} s`,
        '< 1 s',
        firstViewMs < 1000,
      ],
      ['decision round trip, median', `${quantile(rtts, 0.5).toFixed(1)} ms`, '< 50 ms', quantile(rtts, 0.5) < 50],
      ['decision round trip, p95', `${quantile(rtts, 0.95).toFixed(1)} ms`, '< 50 ms', quantile(rtts, 0.95) < 50],
      ['decision round trip, max', `${Math.max(...rtts).toFixed(1)} ms`, '—', true],
      ['every photo listed again (a poll from the start)', `${pollAllMs.toFixed(0)} ms`, '—', true],
      [
        'server RSS before the TIFF (peak)',
        `${beforeTiff.rssMb.toFixed(0)} MB (${beforeTiff.peakMb.toFixed(0)} MB)`,
        '< 300 MB',
        beforeTiff.peakMb < 300,
      ],
      ['server RSS at the end (peak)', `${mem.rssMb.toFixed(0)} MB (${mem.peakMb.toFixed(0)} MB)`, '< 300 MB', mem.peakMb < 300],
      [`preview of a ${tiffMb.toFixed(0)} MB 16-bit TIFF (5800×2900), first`, `${tiffMakeS.toFixed(2)} s`, '< 3 s', tiffMakeS < 3],
      ['the same, from the cache', `${tiffCacheMs.toFixed(0)} ms`, 'cached', tiffCacheMs < 200],
    ];
    console.log(`darkroom review bench (${new Date().toISOString().slice(0, 10)}; ledger built in ${buildS.toFixed(1)} s)`);
    console.log('| figure | measured | target | met |\n|---|---|---|---|');
    for (const [what, got, target, ok] of rows) console.log(`| ${what} | ${got} | ${target} | ${ok ? 'yes' : '**no**'} |`);
    if (rows.some((r) => !r[3])) process.exitCode = 1;
  } finally {
    agent.destroy();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
