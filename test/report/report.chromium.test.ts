import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser } from '../helpers/browser.js';
import { runCli } from '../helpers/cli.js';
import { FAILED_REASON, HELD_REASON, makeReportFixture, SECRET_KEY, SKIPPED_REASON } from './fixture.js';

const SCREENSHOT = path.resolve('test-results', 'report.png');

describe('darkroom report, through the CLI, opened in headless Chromium', () => {
  let dir: string;
  let file: string;
  let stdout: string;
  let html: string;
  let browser: Browser | undefined;
  let page: Page;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'darkroom-report-'));
    const made = await makeReportFixture(dir);
    made.ledger.close();
    const r = await runCli(['report', 'jobs.yaml', '--out', 'morning/report.html'], { DARKROOM_REPORT_TEST_KEY: SECRET_KEY }, { cwd: dir });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    stdout = r.stdout;
    file = path.join(dir, 'morning', 'report.html');
    html = readFileSync(file, 'utf8');
  });

  afterAll(async () => {
    await browser?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('writes the page and its thumbnails folder, and says where, with the counts', () => {
    expect(stdout).toContain('report written to morning/report.html');
    expect(stdout).toContain('thumbnails in morning/report-thumbs');
    expect(stdout).toContain('8 total · 5 done · 1 failed · 1 held · 1 pending · 1 skipped');
    expect(stdout).toContain('2 format changes · 1 done photo with a missing or unreadable output');
    // 5 done inputs + 4 results (one is gone) + the inputs of the failed and held photos (the skipped one is no image)
    expect(readdirSync(path.join(dir, 'morning', 'report-thumbs')).filter((f) => f.endsWith('.webp'))).toHaveLength(11);
  });

  it('--no-thumbs: the files looked at, no thumbnail made', async () => {
    const r = await runCli(['report', 'jobs.yaml', '--out', 'bare/report.html', '--no-thumbs'], {}, { cwd: dir });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('no thumbnails (--no-thumbs)');
    expect(r.stdout).toContain('2 format changes');
    expect(readdirSync(path.join(dir, 'bare'))).toEqual(['report.html']);
  });

  it('carries no key, no absolute path, and loads nothing from the network', () => {
    expect(html).not.toMatch(/<link|@import|url\(\s*['"]?(?!data:)/i);
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);
    expect(html.toLowerCase()).not.toContain('x-api-key');
    expect(html).not.toContain(SECRET_KEY);
    expect(html).not.toContain(dir);
  });

  it('shows every photo with sizes, formats, thumbnails, the format change, reasons and working links', async () => {
    // Launched here, not in a hook, so a browser that does not start fails this test with its message.
    browser = await launchBrowser();
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const requests: string[] = [];
    page.on('request', (r) => {
      if (!/^(file|data):/.test(r.url())) requests.push(r.url());
    });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(pathToFileURL(file).href, { waitUntil: 'load' });
    expect(errors).toEqual([]);

    const rows = page.locator('#photo-rows tr');
    expect(await rows.count()).toBe(9 + 0); // 9 photos (the skipped one included), one page
    expect(await page.locator('#page-info').innerText()).toBe('9 photos · page 1 of 1');

    // every thumbnail shown loads from the thumbnails folder
    await page.$$eval('img', (list) =>
      Promise.all(list.map((i) => (i.complete ? null : new Promise((r) => ((i.onload = r), (i.onerror = r)))))),
    );
    const imgs = await page.$$eval('img.thumb', (list) =>
      list.map((i) => ({ alt: i.alt, w: i.naturalWidth, h: i.naturalHeight, src: i.getAttribute('src') })),
    );
    expect(imgs).toHaveLength(11);
    for (const i of imgs) {
      expect(i.w, `image "${i.alt}" did not load`).toBeGreaterThan(0);
      expect(Math.max(i.w, i.h)).toBeLessThanOrEqual(160);
      expect(i.src).toMatch(/^report-thumbs\/[0-9a-f]{24}\.webp$/);
    }

    const png = rows.filter({ hasText: 'family/grandma & grandpa <wedding>.png' });
    expect(await png.locator('td.facts').allInnerTexts()).toEqual([
      expect.stringMatching(/^PNG · 640×480 · [\d.]+ KB$/),
      expect.stringMatching(/^JPEG · 640×480 · [\d.]+ KB\s*format changed: PNG → JPEG$/),
    ]);
    expect(await png.getAttribute('class')).toBe('fmt-changed');
    const beach = rows.filter({ hasText: 'album 1951/beach.jpg' });
    expect(await beach.locator('.flag.changed').count()).toBe(0);

    // the full-size link is relative to the report and resolves to the output
    const href = await beach.locator('a.full').getAttribute('href');
    expect(href).toBe('../restored/album%201951/beach.jpg');
    const target = new URL(href!, pathToFileURL(file));
    expect(existsSync(target)).toBe(true);
    const resp = await page.request.get(target.href).catch(() => null);
    if (resp) expect(resp.ok()).toBe(true);

    const gone = rows.filter({ hasText: 'loose/result-gone.jpg' });
    expect(await gone.locator('.thumb.placeholder').innerText()).toBe('output missing');
    expect(await gone.locator('td.facts').nth(1).innerText()).toBe('missing not found');

    for (const [state, reason] of [
      ['failed', FAILED_REASON],
      ['held', HELD_REASON],
      ['skipped', SKIPPED_REASON],
    ] as const) {
      const row = page.locator(`#photo-rows tr[data-state="${state}"]`);
      expect(await row.locator('.reason').innerText(), state).toBe(reason);
    }
    // a problem's input thumbnail
    expect(await page.locator('#photo-rows tr[data-state="failed"] img.thumb').count()).toBe(1);
    expect(await page.locator('table.problems tr[data-state="held"]').innerText()).toContain('dr-held-0001');

    // filter: problems, then held only, then format changed
    await page.selectOption('#state-filter', 'problems');
    expect(await rows.evaluateAll((r) => r.map((x) => x.getAttribute('data-state')))).toEqual(['failed', 'held', 'skipped']);
    await page.selectOption('#state-filter', 'held');
    expect(await rows.count()).toBe(1);
    await page.selectOption('#state-filter', 'changed');
    expect(await rows.locator('td.path .p').allInnerTexts()).toEqual(['family/grandma & grandpa <wedding>.png', 'loose/harbour.webp']);
    await page.selectOption('#state-filter', 'all');
    await page.fill('#path-filter', 'album 1951');
    expect(await rows.count()).toBe(2);

    const totals = await page.locator('#totals .card').allInnerTexts();
    expect(totals.map((s) => s.replace(/\s+/g, ' ').trim())).toEqual([
      '8 photos',
      '5 done',
      '1 failed',
      '1 held',
      '1 pending',
      '1 skipped (not sent: not in the total)',
      '33 calls made',
      '0 credits (known part)',
    ]);
    const figures = await page.locator('dl.figures').innerText();
    // 5 restore + 5 upscale tasks succeeded: neither has a cost in the spec
    expect(figures).toMatch(/Credits spent\s+0 \+ 5 restore tasks \+ 5 upscale tasks of unknown cost/);
    expect(figures).toContain('Counted from the ledger: 10 tasks ended SUCCESS');
    expect(figures).toMatch(/Format changes\s+2/);

    mkdirSync(path.dirname(SCREENSHOT), { recursive: true });
    await page.fill('#path-filter', '');
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    expect(requests).toEqual([]);
  });
});
