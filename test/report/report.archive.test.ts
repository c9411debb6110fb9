import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type Database from 'better-sqlite3';
import sharp from 'sharp';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installClock, VirtualClock } from '../../src/clock.js';
import { Ledger } from '../../src/ledger/index.js';
import { launchBrowser } from '../helpers/browser.js';
import { runCli } from '../helpers/cli.js';
import { discovered } from '../helpers/discovered.js';

const N = 3000;
const START_MS = Date.UTC(2026, 4, 2, 20, 0, 0);
/** Every 10th photo a PNG that comes back as JPEG; 150 failed, 100 held, 50 skipped, the rest done. */
const stateOf = (i: number) => (i < 150 ? 'failed' : i < 250 ? 'held' : i < 300 ? 'skipped' : 'done');
const relOf = (i: number) =>
  `box-${String(Math.floor(i / 100)).padStart(2, '0')}/photo-${String(i).padStart(4, '0')}.${i % 10 === 0 ? 'png' : 'jpg'}`;

/**
 * An archive of 3,000 photos, written straight through the Ledger API under a virtual clock
 * (one enhance step, a photo every 4 s in two evenings with a 3-hour pause between), into a
 * memory ledger saved to a file at the end: a file ledger fsyncs every transaction, and this
 * makes ~25,000 of them. The files are tiny images, two of each kind, written 6,000 times.
 */
async function makeArchive(dir: string): Promise<{ jobsFile: string; done: number }> {
  const inputDir = path.join(dir, 'photos');
  const outputDir = path.join(dir, 'restored');
  writeFileSync(
    path.join(dir, 'jobs.yaml'),
    stringify({
      service: { baseUrl: 'http://127.0.0.1:9', apiKeyEnv: 'DARKROOM_ARCHIVE_TEST_KEY' },
      input: { dir: './photos' },
      output: { dir: './restored' },
      steps: [{ capability: 'enhance' }],
      ledger: './darkroom.db',
    }),
  );
  const img = (w: number, h: number, hue: number) =>
    sharp({ create: { width: w, height: h, channels: 3, background: { r: hue, g: 120, b: 255 - hue } } });
  const inJpg = await img(48, 36, 40).jpeg().toBuffer();
  const inPng = await img(48, 36, 90).png().toBuffer();
  const outJpg = await img(96, 72, 200).jpeg().toBuffer();

  const clock = new VirtualClock(START_MS);
  const restore = installClock(clock);
  try {
    const ledger = Ledger.open(':memory:');
    const rels = Array.from({ length: N }, (_, i) => relOf(i));
    for (const rel of rels) {
      mkdirSync(path.dirname(path.join(inputDir, rel)), { recursive: true });
      writeFileSync(path.join(inputDir, rel), rel.endsWith('.png') ? inPng : inJpg);
    }
    discovered(
      ledger,
      rels.map((rel, i) => ({
        relPath: rel,
        srcPath: path.join(inputDir, rel),
        sizeBytes: rel.endsWith('.png') ? inPng.length : inJpg.length,
        ...(stateOf(i) === 'skipped' ? { skipReason: `not an image: ${path.join(inputDir, rel)} is damaged` } : {}),
      })),
    );
    const key = 'k_archive00001';
    let calls = 0;
    const call = (method: string, endpoint: string) =>
      ledger.calls.log({
        at_ms: clock.now(),
        key_fp: key,
        method,
        endpoint,
        http_status: 200,
        code: 0,
        request_id: `srv-${++calls}`,
        sent_request_id: `dr-${calls}`,
        duration_ms: 100,
        error: null,
      });
    const idOf = new Map(ledger.items.all().map((r) => [r.rel_path, r.id]));
    let done = 0;
    for (let i = 0; i < N; i++) {
      const state = stateOf(i);
      if (state === 'skipped') continue;
      if (i === 1500) clock.advanceBy(3 * 3_600_000); // the machine was off between two evenings
      const id = idOf.get(rels[i]!)!;
      call('POST', '/api/v1/image/upload');
      ledger.items.move(id, 'queued', 'uploading', { key_fp: key });
      ledger.items.move(id, 'uploading', 'uploaded', {
        input_url: `https://cdn.example/u/${id}`,
        image_url: `https://cdn.example/u/${id}`,
      });
      const sub = ledger.submissions.begin(ledger.items.get(id)!, 'enhance', key, `dr-create-${id}`);
      call('POST', '/api/v1/enhance/generate');
      clock.advanceBy(1000);
      if (state === 'held') {
        ledger.submissions.ambiguous(
          sub,
          ledger.items.get(id)!,
          { httpStatus: null, code: null, responseRequestId: null, error: 'timeout' },
          'create timed out: outcome unknown, held',
        );
        continue;
      }
      ledger.submissions.accept(sub, ledger.items.get(id)!, {
        taskId: `t-${id}`,
        businessType: 'ENHANCE',
        responseRequestId: `srv-c-${id}`,
        waitHintMs: 2000,
        pollAtMs: clock.now() + 2000,
      });
      clock.advanceBy(2000);
      call('GET', '/api/v1/tasks/{businessType}/{taskId}');
      if (state === 'failed') {
        ledger.tasks.failed(ledger.items.get(id)!, 'ERROR', 'task ERROR: the service could not process this photo');
        continue;
      }
      ledger.tasks.succeeded(ledger.items.get(id)!, `https://results.example/t-${id}.jpg`, true);
      ledger.outputs.start(ledger.items.get(id)!);
      const out = path.join(outputDir, rels[i]!.replace(/\.\w+$/, '.jpg'));
      mkdirSync(path.dirname(out), { recursive: true });
      writeFileSync(out, outJpg);
      ledger.outputs.done(ledger.items.get(id)!, out);
      clock.advanceBy(1000);
      done++;
    }
    writeFileSync(path.join(dir, 'darkroom.db'), (ledger as unknown as { db: Database.Database }).db.serialize());
    ledger.close();
    return { jobsFile: path.join(dir, 'jobs.yaml'), done };
  } finally {
    restore();
  }
}

describe('darkroom report for an archive of 3,000 photos, through the CLI and in Chromium', () => {
  let dir: string;
  let html: string;
  let stdout: string;
  let done: number;
  const file = () => path.join(dir, 'morning', 'report.html');

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'darkroom-archive-'));
    ({ done } = await makeArchive(dir));
    const r = await runCli(['report', 'jobs.yaml', '--out', 'morning/report.html'], {}, { cwd: dir, timeoutMs: 120_000 });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    stdout = r.stdout;
    html = readFileSync(file(), 'utf8');
  }, 180_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('stays under 10 MB of HTML, with no absolute path of the machine in it', () => {
    const mb = Buffer.byteLength(html) / 1_048_576;
    console.log(`report for ${N} photos: ${mb.toFixed(2)} MB of HTML`);
    expect(mb).toBeLessThan(10);
    expect(stdout).toContain(`photos   ${N - 50} total · ${done} done · 150 failed · 100 held · 0 pending · 50 skipped`);
    expect(stdout).toContain(`files    ${done / 10} format changes`);
    expect(html).not.toContain(dir);
    expect(html).not.toContain(tmpdir() + path.sep);
    // the skipped photos' reasons quoted their absolute path: rewritten relative to the job's folder
    expect(html).toContain('not an image: photos/box-02/photo-0250.png is damaged');
  });

  it('opens in Chromium, filters by state a page at a time, flags format changes, links resolve', async () => {
    const browser = await launchBrowser();
    try {
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(e.message));
      const t0 = Date.now();
      await page.goto(pathToFileURL(file()).href, { waitUntil: 'load' });
      await page.locator('#photo-rows tr').first().waitFor();
      console.log(`report for ${N} photos: loaded in Chromium in ${Date.now() - t0} ms`);
      expect(errors).toEqual([]);

      const rows = page.locator('#photo-rows tr');
      const info = page.locator('#page-info');
      expect(await rows.count()).toBe(100);
      expect(await info.innerText()).toBe(`${N} photos · page 1 of 30`);

      await page.selectOption('#state-filter', 'failed');
      expect(await info.innerText()).toBe('150 photos · page 1 of 2');
      expect(await rows.count()).toBe(100);
      expect(new Set(await rows.evaluateAll((r) => r.map((x) => x.getAttribute('data-state'))))).toEqual(new Set(['failed']));
      await page.click('#next-page');
      expect(await info.innerText()).toBe('150 photos · page 2 of 2');
      expect(await rows.count()).toBe(50);

      await page.selectOption('#state-filter', 'held');
      expect(await rows.count()).toBe(100);
      expect(await info.innerText()).toBe('100 photos · page 1 of 1');
      await page.selectOption('#state-filter', 'done');
      expect(await info.innerText()).toBe(`${done} photos · page 1 of ${Math.ceil(done / 100)}`);

      await page.selectOption('#state-filter', 'changed');
      expect(await info.innerText()).toBe(`${done / 10} photos · page 1 of ${Math.ceil(done / 10 / 100)}`);
      const first = rows.first();
      expect(await first.locator('.flag.changed').innerText()).toBe('format changed: PNG → JPEG');
      expect(await first.locator('td.facts').first().innerText()).toMatch(/^PNG · 48×36 · \d+ B$/);
      expect(await first.locator('td.facts').nth(1).innerText()).toMatch(/^JPEG · 96×72 · \d+ B/);

      // the full-size link resolves to the output beside the report's folder
      const href = await first.locator('a.full').getAttribute('href');
      expect(href).toBe('../restored/box-03/photo-0300.jpg');
      const target = new URL(href!, pathToFileURL(file()));
      expect(existsSync(target)).toBe(true);
      // thumbnails of the rows shown load
      const img = first.locator('img.thumb').nth(1);
      await expect.poll(() => img.evaluate((i) => (i as unknown as { naturalWidth: number }).naturalWidth)).toBeGreaterThan(0);
    } finally {
      await browser.close();
    }
  });

  it('--out - and --out /dev/stdout write the page to stdout, the summary to stderr, and leave /dev/stdout alone', async () => {
    for (const out of ['-', '/dev/stdout']) {
      const before = lstatSync('/dev/stdout');
      const r = await runCli(['report', 'jobs.yaml', '--out', out], {}, { cwd: dir, timeoutMs: 120_000 });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout.startsWith('<!doctype html>')).toBe(true);
      expect(r.stdout.trimEnd().endsWith('</html>')).toBe(true);
      expect(r.stderr).toContain('report written to');
      expect(r.stderr).toContain('no thumbnails (give --thumbs DIR for them)');
      const after = lstatSync('/dev/stdout');
      expect(after.isFile()).toBe(false);
      expect(after.isSymbolicLink() || after.isCharacterDevice()).toBe(true);
      expect(after.mode).toBe(before.mode);
    }
  });

  it('a symbolic link given as --out is written through, and stays a link', async () => {
    const real = path.join(dir, 'published.html');
    writeFileSync(real, 'old');
    const link = path.join(dir, 'latest.html');
    symlinkSync(real, link);
    const r = await runCli(
      ['report', 'jobs.yaml', '--out', 'latest.html', '--thumbs', 'morning/report-thumbs'],
      {},
      { cwd: dir, timeoutMs: 120_000 },
    );
    expect(r.code, r.stderr).toBe(0);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(readFileSync(real, 'utf8').startsWith('<!doctype html>')).toBe(true);
  });
});
