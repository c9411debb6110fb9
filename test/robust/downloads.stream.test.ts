import { copyFileSync, existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Ledger } from '../../src/ledger/index.js';
import { TEMP_SUFFIX } from '../../src/outputs/atomic.js';
import { downloadStage } from '../../src/run/stages/download.js';
import { stageContext } from '../helpers/runContext.js';
import { nodeOutputFs, type OutputFs } from '../../src/outputs/outputfs.js';
import { listenLocal } from '../helpers/http.js';
import { makeJob, makeTempDir, writePhoto } from '../helpers/job.js';
import { simulate } from '../helpers/simulate.js';
import { succeededItem } from '../helpers/discovered.js';

/**
 * Issue 12, point 9: results streamed to disk, checked on the stream, and the other files
 * of a result (a duplicate's output, kept intermediates) copied from the written file.
 */

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** A loopback result host sending `body` in chunks of `chunk` bytes, each in its own write. */
async function chunked(body: Buffer, chunk: number): Promise<string> {
  const server = await listenLocal((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(body.length) });
    let at = 0;
    const next = () => {
      if (at >= body.length) return void res.end();
      const part = body.subarray(at, at + chunk);
      at += part.length;
      res.write(part, next);
    };
    next();
  });
  cleanups.push(server.close);
  return server.origin;
}

const jpeg = () => readFileSync(new URL('../../examples/photos/harbour.jpg', import.meta.url));

describe('a streamed result', () => {
  it('arriving in many small chunks is written whole, byte for byte, its type told from the first bytes', async () => {
    const body = jpeg();
    // Chunks of 5 bytes: the type is known only once a few chunks are in.
    const origin = await chunked(body, 5);
    const dir = makeTempDir();
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const ledger = Ledger.open(':memory:');
    const item = succeededItem(ledger, 'a/photo.png', `${origin}/r/x`);
    expect(await downloadStage(stageContext({ ledger, outputDir: path.join(dir, 'out') }), item)).toBe('done');
    // A JPEG whatever the name said: the output's extension is the result's real type.
    expect(readFileSync(path.join(dir, 'out', 'a', 'photo.jpg')).equals(body)).toBe(true);
  });

  it('that is not an image is refused from its first bytes, nothing written, retried later (the photo stays paid-for)', async () => {
    const origin = await chunked(Buffer.from('<html>a captive portal, not your photo</html>'.repeat(100)), 64);
    const dir = makeTempDir();
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const ledger = Ledger.open(':memory:');
    const item = succeededItem(ledger, 'p.jpg', `${origin}/r/x`);
    expect(await downloadStage(stageContext({ ledger, outputDir: path.join(dir, 'out') }), item)).toBe('retry');
    expect(ledger.items.get(item.id)).toMatchObject({ state: 'succeeded', retries: 1 });
    expect(ledger.items.get(item.id)!.reason).toBe('result is not a JPG, PNG or WEBP image');
    expect(existsSync(path.join(dir, 'out'))).toBe(false);
  });

  it('whose write fails midway (disk full) leaves no partial file, stays paid-for, and tells the run', async () => {
    const body = Buffer.concat([jpeg(), Buffer.alloc(256 * 1024, 1)]);
    const origin = await chunked(body, 16 * 1024);
    const dir = makeTempDir();
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    let writes = 0;
    const fs: OutputFs = {
      ...nodeOutputFs,
      writeAsync: async (fd, data) => {
        if (++writes > 1) throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
        await nodeOutputFs.writeAsync(fd, data);
      },
    };
    const ledger = Ledger.open(':memory:');
    const item = succeededItem(ledger, 'p.jpg', `${origin}/r/x`);
    const out = path.join(dir, 'out');
    const ctx = stageContext({ ledger, outputDir: out, seams: { outputFs: fs } });
    expect(await downloadStage(ctx, item)).toBe('retry');
    // The run stops new creates: the disk cannot take files (exit 1), the photo stays paid-for.
    expect(ctx.control.halt).toMatchObject({ kind: 'disk', exitCode: 1, immediate: false });
    expect(ctx.control.halt!.message).toMatch(/ENOSPC/);
    expect(ledger.items.get(item.id)!.state).toBe('succeeded');
    expect(readdirSync(out)).toEqual([]);
    // Space again: the same result, downloaded whole.
    expect(await downloadStage(stageContext({ ledger, outputDir: out }), ledger.items.get(item.id)!)).toBe('done');
    expect(readFileSync(path.join(out, 'p.jpg')).equals(body)).toBe(true);
    expect(readdirSync(out).filter((f) => f.endsWith(TEMP_SUFFIX))).toEqual([]);
  });
});

describe('the other files of a result', () => {
  it("a duplicate's output and its kept intermediate are copies of the files written, each result fetched once", async () => {
    // metadata: none, so the copies are byte for byte (with metadata each names its own original: test/metadata).
    const job = await makeJob({
      photos: 0,
      steps: [{ capability: 'restore' }, { capability: 'upscale', resolution: '4K' }],
      extra: { output: { dir: './out', keepIntermediates: true, metadata: 'none' } },
    });
    cleanups.push(job.cleanup);
    await writePhoto(path.join(job.inputDir, 'a.jpg'), 1);
    copyFileSync(path.join(job.inputDir, 'a.jpg'), path.join(job.inputDir, 'b.jpg'));
    const fetched: string[] = [];
    const r = await simulate({
      job,
      resultIntercept: (url, forward) => {
        fetched.push(url.pathname);
        return forward();
      },
    });
    expect(r.result.status).toMatchObject({ total: 1, done: 1 });
    expect(fetched).toHaveLength(2);
    const files = readdirSync(job.outputDir).sort();
    expect(files).toEqual(['a.jpg', 'a.restore.jpg', 'b.jpg', 'b.restore.jpg']);
    const read = (f: string) => readFileSync(path.join(job.outputDir, f));
    expect(read('b.jpg').equals(read('a.jpg'))).toBe(true);
    expect(read('b.restore.jpg').equals(read('a.restore.jpg'))).toBe(true);
  });
});
