import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { WireRequest, WireResponse } from '../../src/api/index.js';
import { Ledger } from '../../src/ledger/index.js';
import { TEMP_SUFFIX } from '../../src/outputs/atomic.js';
import { inside } from '../../src/outputs/naming.js';
import { downloadStage } from '../../src/run/stages/download.js';
import { stageContext } from '../helpers/runContext.js';
import { listenLocal } from '../helpers/http.js';
import { makeJob, makeTempDir } from '../helpers/job.js';
import { simulate } from '../helpers/simulate.js';
import { createsPerPhoto } from './helpers.js';
import { look as query } from '../helpers/ledger.js';
import { succeededItem } from '../helpers/discovered.js';

/**
 * Issue 4, point 3: downloads (L4). A whole-download deadline; an expired result URL
 * answered by one fresh poll, then a new create if the task is gone; temp files of a
 * killed run swept; a file the ledger did not write never overwritten; no output path
 * outside the output folder.
 */

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** A transport intercept that runs `then` once the upload of the file named `filename` has been answered. */
function afterUploadOf(filename: string, then: () => void) {
  let done = false;
  return async (req: WireRequest, forward: () => Promise<WireResponse>): Promise<WireResponse> => {
    const res = await forward();
    const body = Buffer.isBuffer(req.body) ? req.body.toString('latin1') : (req.body ?? '');
    if (!done && req.url.endsWith('/api/v1/image/upload') && body.includes(`filename="${filename}"`)) {
      done = true;
      then();
    }
    return res;
  };
}

async function serve(handler: http.RequestListener): Promise<string> {
  const server = await listenLocal(handler);
  cleanups.push(server.close);
  return server.origin;
}

describe('a download', () => {
  it('has a total deadline: a host that trickles bytes forever is cut off, and the download retried later', async () => {
    const dir = makeTempDir();
    cleanups.push(() => void import('node:fs').then((fs) => fs.rmSync(dir, { recursive: true, force: true })));
    // Headers at once, then a byte every 50 ms: no idle timeout ever fires.
    const origin = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': '100000' });
      res.write(Buffer.from([0xff, 0xd8, 0xff]));
      const t = setInterval(() => res.write(Buffer.from([0])), 50);
      res.on('close', () => clearInterval(t));
    });
    const ledger = Ledger.open(':memory:');
    const item = succeededItem(ledger, 'slow.jpg', `${origin}/r/slow.jpg`);
    const started = Date.now();
    const outcome = await downloadStage(
      stageContext({ ledger, outputDir: path.join(dir, 'out'), seams: { downloadDeadlineMs: 400 } }),
      item,
    );
    expect(Date.now() - started).toBeLessThan(3000);
    expect(outcome).toBe('retry');
    expect(ledger.items.get(item.id)).toMatchObject({ state: 'succeeded', retries: 1 });
    expect(ledger.items.get(item.id)!.reason).toMatch(/did not finish within its deadline of 400 ms/);
    expect(existsSync(path.join(dir, 'out'))).toBe(false);
  });

  it('checks the length against Content-Length: a short body is retried, never written under the output name', async () => {
    const dir = makeTempDir();
    let calls = 0;
    const jpeg = readFileSync(new URL('../../examples/photos/harbour.jpg', import.meta.url));
    const origin = await serve((_req, res) => {
      calls++;
      res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': String(jpeg.length) });
      if (calls === 1) res.write(jpeg.subarray(0, 1000), () => res.destroy());
      else res.end(jpeg);
    });
    const ledger = Ledger.open(':memory:');
    const item = succeededItem(ledger, 'a/b.jpg', `${origin}/r/b.jpg`);
    const out = path.join(dir, 'out');
    expect(await downloadStage(stageContext({ ledger, outputDir: out }), item)).toBe('retry');
    expect(existsSync(path.join(out, 'a', 'b.jpg'))).toBe(false);
    expect(await downloadStage(stageContext({ ledger, outputDir: out }), ledger.items.get(item.id)!)).toBe('done');
    expect(readFileSync(path.join(out, 'a', 'b.jpg')).equals(jpeg)).toBe(true);
    expect(readdirSync(path.join(out, 'a')).filter((f) => f.endsWith(TEMP_SUFFIX))).toEqual([]);
  });
});

describe('an expired result URL', () => {
  it('(403/404/410 from the result host) is answered by one fresh poll for a new URL', async () => {
    const job = await makeJob({ photos: 6, steps: [{ capability: 'enhance' }] });
    const ledger = Ledger.open(job.ledgerFile);
    cleanups.push(job.cleanup, () => ledger.close());
    // Every task's first URL expires at its first GET; the URL a later poll hands out works.
    const r = await simulate({ job, ledger, sim: { faults: { expiredResultUrl: { probability: 1 } } } });
    expect(r.result.status).toMatchObject({ total: 6, done: 6 });
    expect(r.audit.faults.expiredResultUrl).toBe(6);
    expect(Object.values(r.audit.createsPerSource)).toEqual([1, 1, 1, 1, 1, 1]);
    expect(query(job.ledgerFile, 'SELECT url_refreshes AS n FROM attempts')).toEqual(Array(6).fill({ n: 1 }));
    const notes = query<{ note: string }>(
      job.ledgerFile,
      "SELECT note FROM transitions WHERE from_state = 'downloading' AND to_state = 'active'",
    );
    expect(notes).toHaveLength(6);
    for (const n of notes)
      expect(n.note).toMatch(/result URL expired \(HTTP (403|404|410) from http:\/\/results\.invalid\); polling task \S+ for a fresh URL/);
    for (const i of ledger.items.all()) expect(i.result_url).toMatch(/\?v=2$/);
  });

  it('then a new create when the poll finds the task gone', async () => {
    const job = await makeJob({ photos: 3, steps: [{ capability: 'enhance' }] });
    cleanups.push(job.cleanup);
    let doomed: string | undefined;
    const gone = (): WireResponse => ({
      status: 404,
      headers: {},
      body: Buffer.from(JSON.stringify({ code: -60404, message: 'task not found', requestId: 'srv-gone' })),
    });
    const r = await simulate({
      job,
      sim: { faults: { expiredResultUrl: { probability: 1 } } },
      // The first task to succeed is gone by the time darkroom polls it for a fresh URL.
      intercept: async (req, forward) => {
        const m = /\/tasks\/[^/]+\/([^/?]+)/.exec(req.url);
        if (m && m[1] === doomed) return gone();
        const res = await forward();
        if (m && doomed === undefined && res.body.includes('"SUCCESS"')) doomed = m[1];
        return res;
      },
    });
    expect(r.result.status).toMatchObject({ total: 3, done: 3 });
    const perPhoto = createsPerPhoto(job, job.sizes.keys(), r.audit.createsPerSource);
    expect(Object.values(perPhoto).sort()).toEqual([1, 1, 2]);
    const expired = r.ledger.items.all().filter((i) => r.ledger.submissions.forItem(i.id).length === 2);
    expect(expired).toHaveLength(1);
  });
});

describe('the output folder', () => {
  it('is swept of temp files a killed run left, and none ever carries an output name', async () => {
    const job = await makeJob({ photos: 2, steps: [{ capability: 'enhance' }] });
    cleanups.push(job.cleanup);
    mkdirSync(path.join(job.outputDir, 'nested'), { recursive: true });
    writeFileSync(path.join(job.outputDir, `.photo-1.png.1a2b3c4d${TEMP_SUFFIX}`), 'partial');
    writeFileSync(path.join(job.outputDir, 'nested', `.x.jpg.00ff00ff${TEMP_SUFFIX}`), 'partial');
    // Today's temp names (issue 12: short and fixed, whatever the output is called).
    writeFileSync(path.join(job.outputDir, 'nested', `.dr-00ff00ff${TEMP_SUFFIX}`), 'partial');
    const r = await simulate({ job });
    expect(r.result.tempFilesSwept).toBe(3);
    expect(r.result.status.done).toBe(2);
    const all = readdirSync(job.outputDir, { recursive: true }).map(String);
    expect(all.filter((f) => f.endsWith(TEMP_SUFFIX))).toEqual([]);
  });

  it('never has a file overwritten that the ledger did not write: the photo stays paid-for, parked with what to do, fetched once', async () => {
    const job = await makeJob({ photos: 3, steps: [{ capability: 'enhance' }] });
    cleanups.push(job.cleanup);
    // photo-1.png comes back as photo-1.png (the simulator passes the bytes through). The
    // operator's file appears once the photo is uploaded: before, the upload stage would have
    // seen it and skipped the photo unpaid (src/outputs/outputPaths.ts).
    const foreign = path.join(job.outputDir, 'photo-1.png');
    const gets = new Map<string, number>();
    const r = await simulate({
      job,
      intercept: afterUploadOf('photo-1.png', () => {
        mkdirSync(job.outputDir, { recursive: true });
        writeFileSync(foreign, 'the operator’s own file');
      }),
      resultIntercept: (url, forward) => {
        gets.set(url.pathname, (gets.get(url.pathname) ?? 0) + 1);
        return forward();
      },
    });
    // Not failed: its task succeeded and was paid for. Parked for this run, not retried in a loop.
    expect(r.result.status).toMatchObject({ total: 3, done: 2, failed: 0, pending: 1, paidNotDownloaded: 1 });
    expect([...gets.values()].sort()).toEqual([1, 1, 1]);
    expect(r.result.status.notDownloaded[0]!.reason).toContain(
      `${foreign} already exists and was not written by this ledger; move it away and run again`,
    );
    expect(r.result.exitCode).toBe(1);
    expect(readFileSync(foreign, 'utf8')).toBe('the operator’s own file');

    // The operator moves the file away; the next run downloads the result, creating nothing.
    rmSync(foreign);
    const again = await simulate({ job, ledger: r.ledger, model: r.model, clock: r.clock });
    expect(again.result.status).toMatchObject({ total: 3, done: 3, pending: 0, paidNotDownloaded: 0 });
    expect(Object.values(again.audit.createsPerSource)).toEqual([1, 1, 1]);
    expect(readFileSync(foreign).subarray(0, 4).toString('latin1')).toBe('\x89PNG');
  });

  it('does take back its own file, renamed into place by a run killed before it could say done', async () => {
    const dir = makeTempDir();
    const jpeg = readFileSync(new URL('../../examples/photos/harbour.jpg', import.meta.url));
    const origin = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': String(jpeg.length) });
      res.end(jpeg);
    });
    const file = path.join(dir, 'ledger.db');
    let ledger = Ledger.open(file);
    const item = succeededItem(ledger, 'p.jpg', `${origin}/r/p.jpg`);
    const out = path.join(dir, 'out');
    // The killed run: claimed the path, renamed the file there, died before `done`.
    ledger.outputs.claim(ledger.outputs.start(item), path.join(out, 'p.jpg'));
    mkdirSync(out);
    writeFileSync(path.join(out, 'p.jpg'), jpeg);
    ledger.close();
    ledger = Ledger.open(file);
    ledger.recover();
    expect(await downloadStage(stageContext({ ledger, outputDir: out }), ledger.items.get(item.id)!)).toBe('done');
    expect(ledger.items.get(item.id)).toMatchObject({ state: 'done', output_path: path.join(out, 'p.jpg') });
    ledger.close();
  });

  it('no output path can leave it: not by the names, not through a symbolic link inside it', async () => {
    const out = path.join(makeTempDir(), 'out');
    for (const rel of ['../x.jpg', 'a/../../x.jpg', '../../etc/passwd.jpg', 'a/b/../../../x.jpg']) {
      expect(() => inside(out, rel, rel), rel).toThrow(/would leave the output folder/);
    }
    expect(inside(out, 'a/..b/c.d.jpg', 'a/..b/c.d.png')).toBe(path.join(out, 'a', '..b', 'c.d.jpg'));

    const job = await makeJob({ photos: 3, steps: [{ capability: 'enhance' }] }); // one is under nested/deep/
    cleanups.push(job.cleanup);
    const elsewhere = makeTempDir('darkroom-elsewhere-');
    // The link appears once nested/deep/photo-2.webp is uploaded (before, the upload stage skips it unpaid).
    const r = await simulate({
      job,
      intercept: afterUploadOf('photo-2.webp', () => {
        mkdirSync(job.outputDir, { recursive: true });
        symlinkSync(elsewhere, path.join(job.outputDir, 'nested'));
      }),
    });
    expect(r.result.status).toMatchObject({ total: 3, done: 2, failed: 0, paidNotDownloaded: 1 });
    expect(r.result.status.notDownloaded[0]!.reason).toMatch(/leads outside the output folder .* through a symbolic link/);
    expect(readdirSync(elsewhere, { recursive: true })).toEqual([]);
  });
});
