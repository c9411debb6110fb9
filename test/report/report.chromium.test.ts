import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reportCommand } from '../../src/cli/report.js';
import { launchBrowser } from '../helpers/browser.js';
import { FAILED_REASON, HELD_REASON, makeReportFixture, SECRET_KEY, SKIPPED_REASON, type Fixture } from './fixture.js';

const SCREENSHOT = path.resolve('test-results', 'report.png');

describe('darkroom report, opened in headless Chromium', () => {
  let dir: string;
  let fx: Fixture;
  let file: string;
  let summary: string;
  let html: string;
  let browser: Browser | undefined;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'darkroom-report-'));
    const made = await makeReportFixture(dir);
    made.ledger.close();
    fx = made;
    ({ file, summary } = await reportCommand(
      { jobs: fx.jobsFile, out: path.join(dir, 'morning', 'report.html') },
      { DARKROOM_REPORT_TEST_KEY: SECRET_KEY },
    ));
    html = readFileSync(file, 'utf8');
  });

  afterAll(async () => {
    await browser?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('writes one file and says where, with the counts', () => {
    expect(file).toBe(path.join(dir, 'morning', 'report.html'));
    expect(summary).toContain(file);
    expect(summary).toContain('9 total · 5 done · 2 failed · 1 held · 1 pending');
    expect(summary).toContain('1 with a missing or unreadable image');
  });

  it('is self-contained and carries no key', () => {
    expect(html).not.toMatch(/<script|<link|@import|url\(\s*['"]?(?!data:)/i);
    expect(html).not.toMatch(/(src|href)="(?!data:|#)/);
    expect(html.toLowerCase()).not.toContain('x-api-key');
    expect(html).not.toContain(SECRET_KEY);
  });

  it('loads every thumbnail, shows placeholders for missing files, reasons, the chart; no network', async () => {
    // Launched here, not in a hook, so a browser that does not start fails this test with its message instead of skipping it.
    browser = await launchBrowser();
    const page = await browser!.newPage({ viewport: { width: 1280, height: 900 } });
    const requests: string[] = [];
    page.on('request', (r) => {
      if (!/^(file|data):/.test(r.url())) requests.push(r.url());
    });
    await page.goto(pathToFileURL(file).href, { waitUntil: 'load' });

    const imgs = await page.$$eval('img', (list) =>
      list.map((i) => ({ alt: i.alt, complete: i.complete, w: i.naturalWidth, h: i.naturalHeight })),
    );
    // every done item's source, and every result except the one whose file is gone
    expect(imgs).toHaveLength(fx.done * 2 - 1);
    for (const i of imgs) {
      expect(i, `image "${i.alt}" did not load`).toMatchObject({ complete: true });
      expect(i.w, `image "${i.alt}" did not load`).toBeGreaterThan(0);
      expect(Math.max(i.w, i.h)).toBeLessThanOrEqual(240);
    }

    const placeholder = page.locator('article.pair:has-text("loose/result-gone.jpg") .after .placeholder');
    await expect(placeholder.isVisible()).resolves.toBe(true);
    expect(await placeholder.innerText()).toMatch(/result missing[\s\S]*not found/);
    expect(await page.locator('.pair').count()).toBe(fx.done);
    expect(await page.locator('.pair h3', { hasText: 'family/grandma & grandpa <wedding>.png' }).count()).toBe(1);
    expect(await page.locator('.pair:has-text("album 1951/picnic.jpg") ol.steps li').allInnerTexts()).toEqual([
      expect.stringMatching(/^restore task-\d+-0-2 \(2 tasks\)$/),
      expect.stringMatching(/^upscale task-\d+-1-1$/),
    ]);

    for (const reason of [FAILED_REASON, HELD_REASON, SKIPPED_REASON]) {
      await expect(page.getByText(reason, { exact: true }).isVisible(), reason).resolves.toBe(true);
    }
    const heldRow = page.locator('table.problems tr[data-state="held"]');
    expect(await heldRow.innerText()).toContain('dr-held-0001');
    const failedRow = page.locator('table.problems tr[data-state="failed"]');
    expect(await failedRow.innerText()).toContain('srv-fail-777');

    const totals = await page.locator('#totals .card').allInnerTexts();
    expect(totals.map((s) => s.replace(/\s+/g, ' ').trim())).toEqual([
      '9 photos',
      '5 done',
      '2 failed (1 skipped)',
      '1 held',
      '1 pending',
      '33 calls made',
    ]);

    const chart = page.locator('svg#throughput-chart');
    await expect(chart.isVisible()).resolves.toBe(true);
    const bars = await chart.locator('rect.col').evaluateAll((rs) => rs.map((r) => Number(r.getAttribute('height'))));
    expect(bars.length).toBeGreaterThan(3);
    expect(bars.filter((h) => h > 0).length).toBe(5);

    mkdirSync(path.dirname(SCREENSHOT), { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    expect(existsSync(SCREENSHOT)).toBe(true);
    expect(requests).toEqual([]);
    await page.close();
  });
});
