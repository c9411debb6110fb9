import { spawn } from 'node:child_process';
import { closeSync, openSync, readSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { listenLocal } from '../helpers/http.js';
import { makeTempDir } from '../helpers/job.js';

/**
 * Issue 12, point 9: downloads are streamed to disk, with the status, Content-Length and
 * magic-byte checks made on the stream, so memory stays flat whatever the result's size (a
 * 3 GB result used to take 12.9 GB of RSS). The download runs in a child process of its
 * own against a loopback server streaming a generated image (PNG magic bytes, then filler),
 * and reports its peak RSS (getrusage ru_maxrss).
 */

const CHILD = fileURLToPath(new URL('./download.child.mjs', import.meta.url));
const MiB = 1024 * 1024;
/** 1 GiB, the figure. */
const SIZE = 1024 * MiB;
const PEAK_LIMIT = 300 * MiB;

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** A PNG's signature, then filler to `size` bytes, written as fast as the socket takes it. */
function serveGenerated(size: number) {
  const magic = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  const filler = Buffer.alloc(MiB, 0x5a);
  return listenLocal((_req, res) => {
    res.writeHead(200, { 'content-type': 'image/png', 'content-length': String(size) });
    res.write(magic);
    let left = size - magic.length;
    const pump = () => {
      while (left > 0) {
        const n = Math.min(left, filler.length);
        left -= n;
        if (!res.write(n === filler.length ? filler : filler.subarray(0, n))) {
          res.once('drain', pump);
          return;
        }
      }
      res.end();
    };
    pump();
  });
}

function runChild(
  url: string,
  outputDir: string,
): Promise<{ outcome: string; state: string; output: string; reason: string | null; startRss: number; peakRss: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CHILD, url, outputDir], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('close', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`child exited ${code}: ${err}`))));
  });
}

describe('a 1 GB result', () => {
  it('is downloaded with a peak RSS under 300 MB, whole and checked', { timeout: 300_000 }, async () => {
    const server = await serveGenerated(SIZE);
    cleanups.push(server.close);
    const dir = makeTempDir();
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const r = await runChild(`${server.origin}/r/big.png`, path.join(dir, 'out'));
    expect(r.reason).toBeNull();
    expect(r).toMatchObject({ outcome: 'done', state: 'done' });
    expect(statSync(r.output).size).toBe(SIZE);
    const fd = openSync(r.output, 'r');
    const head = Buffer.alloc(8);
    readSync(fd, head, 0, 8, 0);
    closeSync(fd);
    expect(head.toString('latin1')).toBe('\x89PNG\r\n\x1a\n');
    // The figure, for the report.
    console.log(`1 GiB download: peak RSS ${(r.peakRss / MiB).toFixed(0)} MiB (${(r.startRss / MiB).toFixed(0)} MiB before it started)`);
    expect(r.peakRss).toBeLessThan(PEAK_LIMIT);
  });
});
