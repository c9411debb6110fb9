import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parse as parseCsv } from 'csv-parse/sync';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { startSim, type RunningSim } from '../../src/sim/server.js';
import { launchBrowser } from '../helpers/browser.js';
import { runCli, type CliResult } from '../helpers/cli.js';
import { makeTempDir } from '../helpers/job.js';
import { Exif, solid } from '../helpers/metadata.js';

/**
 * An archive from elsewhere: file names and captions someone else wrote, hostile ones. Each
 * goes through run, status, plan, report and manifest, and what reaches the terminal, the
 * page and the CSV is checked: no raw control byte from a name or caption on stdout or
 * stderr outside --json, bidi overrides visibly marked, no script run in the report, every
 * CSV cell a spreadsheet would run defused.
 */

const KEY = 'e2e-hostile-key-81b0c2d9e4';
const ESC = '\x1b';
const BEL = '\x07';

/** Good photos with hostile names (each gets an output). */
const GOOD = [
  `evil${ESC}[2J${ESC}]0;PWN${BEL}name.jpg`,
  `clip${ESC}]52;c;ZXZpbA==${BEL}.jpg`,
  'safe\rEVIL.jpg',
  'photo\u202egnp.jpg',
  'pa\u200by.jpg',
  '"><img src=x onerror="window.__pwned=1">.jpg',
  '=HYPERLINK("x";"y")+cmd|\'calc\'!A0.jpg',
  '+cmd.jpg',
  '-2+3.jpg',
  '@SUM(1).jpg',
  `${'L'.repeat(200)}.jpg`,
];
/** Bad content under a hostile name: skipped, so it is listed by status, plan and the report. */
const SKIPPED = `broken${ESC}[31mRED${BEL}\u202e.jpg`;
/** Captions someone typed (IPTC, which takes any byte). */
const CAPTIONS: Record<string, string> = {
  [GOOD[0]!]: `caption ${ESC}[2J${ESC}]52;c;ZXZpbA==${BEL} cleared`,
  [GOOD[3]!]: '<script>window.__pwned=2</script><b>bold</b>',
  [GOOD[6]!]: '=1+1',
};

/** A raw control byte (C0 but tab and line feed, DEL, C1) or a raw bidi override in text. */
const RAW = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

function expectClean(r: CliResult, what: string): void {
  expect(RAW.test(r.stdout), `${what}: stdout ${JSON.stringify(r.stdout.match(RAW)?.[0])}`).toBe(false);
  expect(RAW.test(r.stderr), `${what}: stderr ${JSON.stringify(r.stderr.match(RAW)?.[0])}`).toBe(false);
}

const exif = new Exif();

describe('hostile names and captions', () => {
  let sim: RunningSim;
  let dir: string;
  let run: CliResult;
  const env = () => ({ DARKROOM_TEST_KEY: KEY });

  beforeAll(async () => {
    sim = await startSim({ keys: [KEY], seed: 9, latency: { medianMs: 150, sigma: 0.3 } });
    dir = makeTempDir('darkroom-e2e-hostile-');
    const photos = path.join(dir, 'photos');
    for (const [i, name] of GOOD.entries()) {
      // Written under a plain name (the test's own ExifTool takes names as they are), then renamed.
      const plain = path.join(photos, `plain-${i}.jpg`);
      await solid(plain, 40 + i, 30, [20 * i, 100, 200 - 10 * i], 'jpeg');
      const caption = CAPTIONS[name];
      if (caption !== undefined) await exif.write(plain, [`-IPTC:Caption-Abstract=${caption}`, '-IPTC:Keywords=ok']);
      const { renameSync } = await import('node:fs');
      renameSync(plain, path.join(photos, name));
    }
    writeFileSync(path.join(photos, SKIPPED), 'not an image');
    // A name that is not UTF-8 at all (Linux allows any byte but / and NUL).
    writeFileSync(Buffer.from(path.join(photos, 'bytes-\xff\xfe.jpg'), 'latin1'), 'not an image either');
    writeFileSync(
      path.join(dir, 'jobs.yaml'),
      stringify({
        service: { apiKeyEnv: 'DARKROOM_TEST_KEY', name: `Evil${ESC}[2J API` },
        input: { dir: './photos' },
        output: { dir: './out', sidecar: 'json' },
        steps: [{ capability: 'restore' }],
        ledger: './state/darkroom.db',
      }),
    );
    run = await runCli(['run', 'jobs.yaml', '--base-url', sim.apiUrl, '--quiet'], env(), { cwd: dir });
  }, 120_000);

  afterAll(async () => {
    await sim.close();
    await exif.end();
    rmSync(dir, { recursive: true, force: true });
  });

  it('runs every good photo, and prints no raw control byte or bidi override from a name', () => {
    expect(run.code, run.stderr).toBe(0); // the two that are no images are skipped: not sent, not counted
    expectClean(run, 'run');
    expect(readdirSync(path.join(dir, 'out')).filter((f) => !f.endsWith('.json'))).toHaveLength(GOOD.length);
  });

  it('status shows the names with their controls escaped and the bidi override marked', async () => {
    const r = await runCli(['status', 'jobs.yaml'], env(), { cwd: dir });
    expectClean(r, 'status');
    expect(r.stdout).toContain('broken\\x1b[31mRED\\x07\\u202e.jpg');
    expect(r.stdout).not.toContain('PWN\x07');
  });

  it('status --json stays exact JSON: the names parse back to the very characters', async () => {
    const r = await runCli(['status', 'jobs.yaml', '--json'], env(), { cwd: dir });
    expect(RAW.test(r.stdout)).toBe(false);
    const s = JSON.parse(r.stdout) as { problems: { path: string }[] };
    expect(s.problems.map((p) => p.path)).toContain(SKIPPED);
  });

  it('run --json events carry the names exactly', async () => {
    const again = await runCli(['run', 'jobs.yaml', '--base-url', sim.apiUrl, '--json'], env(), { cwd: dir });
    expect(RAW.test(again.stdout)).toBe(false);
    const events = again.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; path?: string });
    expect(events.at(-1)!.type).toBe('summary');
    expectClean({ ...again, stdout: '' }, 'run --json stderr');
  });

  it('plan lists the skipped names safely', async () => {
    const r = await runCli(['plan', 'jobs.yaml', '--base-url', sim.apiUrl], env(), { cwd: dir });
    expectClean(r, 'plan');
    expect(r.stdout).toContain('\\u202e');
  });

  it("manifest's provenance.csv defuses every cell a spreadsheet would run, and parses back to the names", async () => {
    const r = await runCli(['manifest', 'jobs.yaml'], env(), { cwd: dir });
    expectClean(r, 'manifest');
    const text = readFileSync(path.join(dir, 'out', 'provenance.csv'), 'utf8');
    const rows = parseCsv(text, { columns: true }) as Record<string, string>[];
    for (const row of rows) for (const cell of Object.values(row)) expect(/^[=+\-@\t\r]/.test(cell), cell).toBe(false);
    const names = rows.map((x) => x.input_path!.replace(/^'(?=[=+\-@\t\r])/, ''));
    expect(names.sort()).toEqual([...GOOD].sort());
    expect(rows.find((x) => x.input_path!.startsWith("'=HYPERLINK"))).toBeDefined();
  });

  it('the report, opened in Chromium, runs no script from a name or caption and shows the text, bidi marked', async () => {
    const r = await runCli(['report', 'jobs.yaml', '--out', 'report.html'], env(), { cwd: dir });
    expectClean(r, 'report');
    let browser: Browser | undefined;
    try {
      browser = await launchBrowser();
      const page = await browser.newPage();
      const dialogs: string[] = [];
      page.on('dialog', (d) => {
        dialogs.push(d.message());
        void d.dismiss();
      });
      await page.goto(pathToFileURL(path.join(dir, 'report.html')).href);
      await page.waitForSelector('#photo-rows tr');
      const pwned = await page.evaluate('window.__pwned ?? null');
      expect(pwned).toBeNull();
      expect(dialogs).toEqual([]);
      const text = await page.locator('#photo-table').innerText();
      expect(text).toContain('"><img src=x onerror="window.__pwned=1">.jpg');
      expect(text).toContain('photo\\u202egnp.jpg');
      expect(text).toContain('<script>window.__pwned=2</script><b>bold</b>');
      expect(text).toContain('caption \\x1b[2J\\x1b]52;c;ZXZpbA==\\x07 cleared');
      expect(await page.locator('#photo-table b').count()).toBe(0);
      expect(await page.locator('#photo-table script').count()).toBe(0);
    } finally {
      await browser?.close();
    }
  }, 120_000);

  it('a report in pages (--page-size): the summary links every page, each of at most that many photos, no script run from a name', async () => {
    const r = await runCli(['report', 'jobs.yaml', '--out', 'paged/report.html', '--page-size', '4'], env(), { cwd: dir });
    expectClean(r, 'report --page-size');
    expect(r.code, r.stderr).toBe(0);
    const pages = readdirSync(path.join(dir, 'paged', 'report-photos')).sort();
    expect(pages).toEqual(['photos-0001.html', 'photos-0002.html', 'photos-0003.html', 'photos-0004.html']);
    expect(r.stdout).toContain('pages    13 photos on 4 pages in paged/report-photos, linked from the report');
    let browser: Browser | undefined;
    try {
      browser = await launchBrowser();
      const page = await browser.newPage();
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(e.message));
      page.on('dialog', (d) => void d.dismiss().then(() => errors.push(`dialog ${d.message()}`)));
      await page.goto(pathToFileURL(path.join(dir, 'paged', 'report.html')).href);
      expect(await page.locator('#photo-rows').count(), 'the summary holds no photo table').toBe(0);
      const links = page.locator('#photo-pages a');
      expect(await links.count()).toBe(4);
      const seen: string[] = [];
      await links.first().click();
      for (let n = 1; ; n++) {
        await page.waitForSelector('#photo-rows tr');
        expect(await page.evaluate('window.__pwned ?? null')).toBeNull();
        const rows = await page.locator('#photo-rows td.path .p').allInnerTexts();
        expect(rows.length, `page ${n}`).toBeLessThanOrEqual(4);
        seen.push(...rows);
        // Thumbnails and full-size links resolve from the page's own folder.
        await page.$$eval('img.thumb', (list) =>
          Promise.all(list.map((i) => (i.complete ? null : new Promise((done) => ((i.onload = done), (i.onerror = done)))))),
        );
        for (const w of await page.$$eval('img.thumb', (list) => list.map((i) => i.naturalWidth))) expect(w).toBeGreaterThan(0);
        for (const href of await page.$$eval('a.full', (list) => list.map((a) => (a as unknown as { href: string }).href))) {
          expect(existsSync(fileURLToPath(href)), href).toBe(true);
        }
        const next = page.locator('nav.toc a', { hasText: 'next page' });
        if ((await next.count()) === 0) break;
        await next.click();
      }
      expect(seen).toHaveLength(13);
      expect(seen).toContain('"><img src=x onerror="window.__pwned=1">.jpg');
      expect(await page.locator('#photo-table script, #photo-table b').count()).toBe(0);
      await page.locator('nav.toc a', { hasText: 'the summary' }).click();
      await page.waitForSelector('#photo-pages');
      expect(errors).toEqual([]);
    } finally {
      await browser?.close();
    }
  }, 120_000);
});
