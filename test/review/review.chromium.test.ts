import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shownText } from '../../src/display.js';
import path from 'node:path';
import { decide } from '../../src/index.js';
import { Ledger } from '../../src/ledger/index.js';
import { startReviewServer, type ReviewServer } from '../../src/review/server.js';
import { launchBrowser } from '../helpers/browser.js';
import { writePhoto, type TestJob } from '../helpers/job.js';
import { simulate } from '../helpers/simulate.js';
import { asPage, doneJob, HOSTILE, raw } from './fixture.js';

/** Another list chosen: the page asks the server for it; waited for until it is shown. */
async function show(page: Page, filter: string): Promise<void> {
  await page.selectOption('#filter', filter);
  await page.waitForFunction((f: string) => (globalThis as any).document.body.dataset.list === `${f} *`, filter);
}

/**
 * The review page in the Chromium `npm ci` brings: 50 photos decided with the keyboard alone
 * (accept, reject with and without a reason, undo, flip, zoom), then a reload that must find
 * every decision; a hostile name shown as text; and the server's refusals over real HTTP.
 */

// Inside page.evaluate the page's document is `(globalThis as any).document`: the tests compile
// without the DOM's types, and the page's CSP refuses the eval a string predicate needs.

type Expected = { decision: 'accept' | 'reject' | null; why: string | null };

describe('darkroom review: the page, by keyboard, in Chromium', () => {
  let job: TestJob;
  let server: ReviewServer;
  let browser: Browser | undefined;
  let page: Page;
  const errors: string[] = [];
  const foreign: string[] = [];

  beforeAll(async () => {
    job = await doneJob(50, { hostile: true });
    server = await startReviewServer({ ledgerFile: job.ledgerFile });
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    job?.cleanup();
  });

  it('refuses: no token, a wrong token (401); a foreign Host, a foreign Origin (403); .. and absolute paths, an unknown id (404)', async () => {
    const { port, token } = server;
    const { cookie, post } = asPage(port, token);
    const host = { Host: `127.0.0.1:${port}` };
    expect((await raw(port, { path: '/', headers: host })).status).toBe(401);
    expect((await raw(port, { path: '/api/photos', headers: host })).status).toBe(401);
    expect((await raw(port, { path: '/api/photos/1/output', headers: host })).status).toBe(401);
    expect((await raw(port, { path: `/?token=${token.slice(1)}x`, headers: host })).status).toBe(401);
    expect((await raw(port, { path: '/api/photos', headers: { ...host, Cookie: `darkroom-review-${port}=wrong` } })).status).toBe(401);
    // DNS rebinding: another site's name pointed at 127.0.0.1 brings its own Host, token or not.
    expect((await raw(port, { path: `/?token=${token}`, headers: { Host: `evil.example:${port}` } })).status).toBe(403);
    expect((await raw(port, { path: '/api/photos', headers: { ...cookie, Host: 'evil.example' } })).status).toBe(403);
    expect((await raw(port, { path: '/api/photos', headers: { ...cookie, Host: `127.0.0.1:${port + 1}` } })).status).toBe(403);
    // With the token, a good route answers; these do not exist.
    expect((await raw(port, { path: '/api/photos', headers: cookie })).status).toBe(200);
    for (const p of [
      '/../../etc/passwd',
      '/api/photos/../../../etc/passwd',
      '/api/photos/1/../../../../etc/passwd',
      '/api/photos/%2e%2e/%2e%2e/etc/passwd',
      '/api/photos/%252e%252e/input',
      '/api/photos/1/input/..',
      '/..%2f..%2fetc%2fpasswd',
      '/etc/passwd',
      '//etc/passwd',
      '/api/photos/1/input?path=/etc/passwd',
      '/api/photos/1/input?file=../../etc/passwd',
      `/api/photos/${encodeURIComponent(job.inputDir)}/input`,
      '/api/photos/1\\..\\..\\etc\\passwd',
      '/review.js/..',
      'http://127.0.0.1/etc/passwd',
      '/api/photos/999999/input',
      '/api/photos/999999/output',
      '/api/photos/abc/input',
    ]) {
      const r = await raw(port, { path: p, headers: cookie });
      expect(r.status, p).toBe(404);
      expect(r.body).not.toContain('root:');
    }
    expect((await raw(port, { method: 'POST', path: '/api/photos/999999/decision', headers: post, body: '{}' })).status).toBe(404);
    // A POST from another origin, or with no Origin, or not JSON (a form a page could send) changes nothing.
    const body = JSON.stringify({ action: 'accept', sha256: null });
    for (const headers of [
      { ...post, Origin: 'http://evil.example' },
      { ...post, Origin: `http://127.0.0.1:${port + 1}` },
      { ...post, Origin: 'null' },
      { ...cookie, 'Content-Type': 'application/json' },
    ]) {
      expect((await raw(port, { method: 'POST', path: '/api/photos/1/decision', headers, body })).status).toBe(403);
    }
    expect(
      (await raw(port, { method: 'POST', path: '/api/photos/1/decision', headers: { ...post, 'Content-Type': 'text/plain' }, body }))
        .status,
    ).toBe(415);
    const ledger = Ledger.open(job.ledgerFile, { readonly: true });
    try {
      expect(ledger.reviews.decisions().size).toBe(0);
    } finally {
      ledger.close();
    }
    // Every answer carries the policy that keeps the page to its own script.
    const page = await raw(port, { path: '/', headers: cookie });
    expect(page.headers['content-security-policy']).toMatch(/default-src 'self'; script-src 'self'/);
    expect(page.headers['x-content-type-options']).toBe('nosniff');
  });

  it('reviews 50 photos with the keyboard alone, and a reload finds every decision', async () => {
    browser = await launchBrowser();
    page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('request', (r) => {
      if (!r.url().startsWith(`http://127.0.0.1:${server.port}/`)) foreign.push(r.url());
    });
    await page.goto(server.url);
    // The token is swapped for the cookie and leaves the address bar.
    expect(page.url()).toBe(`http://127.0.0.1:${server.port}/`);
    const cookies = await page.context().cookies();
    expect(cookies).toEqual([expect.objectContaining({ name: `darkroom-review-${server.port}`, httpOnly: true, sameSite: 'Strict' })]);
    await page.waitForSelector('body[data-ready="1"]');
    expect(await page.textContent('#position')).toBe('1 / 51');

    const expected = new Map<number, Expected>();
    const current = async () => Number(await page.getAttribute('#stage', 'data-id'));
    const decided = (key: () => Promise<void>) =>
      Promise.all([page.waitForResponse((r) => r.url().endsWith('/decision') && r.request().method() === 'POST'), key()]).then(
        async ([r]) => {
          expect(r.status()).toBe(200);
          // The page shows the decision once it is in the ledger: wait for the answer to be drawn.
          await page.waitForFunction(() => /in the ledger|cleared/.test((globalThis as any).document.getElementById('saying').textContent));
          await page.evaluate(() => ((globalThis as any).document.getElementById('saying').textContent = ''));
        },
      );
    for (let i = 0; i < 50; i++) {
      const id = await current();
      const kind = i % 5;
      if (kind === 0) {
        await page.keyboard.press('x');
        await page.waitForSelector('#reason-box', { state: 'visible' });
        await page.keyboard.type(`smeared text ${i}`);
        await decided(() => page.keyboard.press('Enter'));
        expected.set(id, { decision: 'reject', why: `smeared text ${i}` });
      } else if (kind === 1) {
        await page.keyboard.press('x');
        await page.waitForSelector('#reason-box', { state: 'visible' });
        await decided(() => page.keyboard.press('Escape'));
        expected.set(id, { decision: 'reject', why: null });
      } else if (kind === 2) {
        // Accept, go back, take it back (undo), accept again.
        await decided(() => page.keyboard.press('p'));
        await page.keyboard.press('ArrowLeft');
        expect(await current()).toBe(id);
        expect(await page.textContent('#decision')).toBe('accepted');
        await decided(() => page.keyboard.press('u'));
        expect(await page.textContent('#decision')).toBe('not reviewed');
        await decided(() => page.keyboard.press('P'));
        expected.set(id, { decision: 'accept', why: null });
      } else if (kind === 3) {
        // Accepted, then undone: left not reviewed.
        await decided(() => page.keyboard.press('p'));
        await page.keyboard.press('ArrowLeft');
        await decided(() => page.keyboard.press('u'));
        await page.keyboard.press('ArrowRight');
        expected.set(id, { decision: null, why: null });
      } else {
        // Flip between input and output in one frame, zoom both to 100 %, back, then accept.
        await page.keyboard.press('f');
        expect(await page.isVisible('#input-frame')).toBe(true);
        expect(await page.isVisible('#output-frame')).toBe(false);
        await page.keyboard.press('f');
        expect(await page.isVisible('#input-frame')).toBe(false);
        expect(await page.isVisible('#output-frame')).toBe(true);
        await page.keyboard.press('s');
        expect(await page.isVisible('#input-frame')).toBe(true);
        await page.waitForFunction(() => (globalThis as any).document.getElementById('output-img').naturalWidth > 0);
        await page.keyboard.press('z');
        const zoomed = await page.evaluate(() => {
          const o = (globalThis as any).document.getElementById('output-img');
          const n = (globalThis as any).document.getElementById('input-img');
          return {
            cls: (globalThis as any).document.getElementById('stage').className as string,
            o: o.getBoundingClientRect().width as number,
            ow: o.naturalWidth as number,
            n: n.getBoundingClientRect().width as number,
          };
        });
        expect(zoomed.cls).toContain('zoom');
        expect(zoomed.o).toBe(zoomed.ow);
        expect(zoomed.n).toBe(zoomed.ow);
        await page.keyboard.press('z');
        expect(await page.getAttribute('#stage', 'class')).not.toContain('zoom');
        await decided(() => page.keyboard.press('p'));
        expected.set(id, { decision: 'accept', why: null });
      }
      expect(await current(), `after photo ${i + 1}`).not.toBe(id);
    }
    expect(expected.size).toBe(50);

    // What the ledger holds is what was decided.
    const ledger = Ledger.open(job.ledgerFile, { readonly: true });
    try {
      const inLedger = ledger.reviews.decisions();
      for (const [id, e] of expected) {
        expect(inLedger.get(id)?.decision ?? null, `photo ${id}`).toBe(e.decision);
        expect(inLedger.get(id)?.reason ?? null, `photo ${id}`).toBe(e.why);
      }
      expect(ledger.reviews.counts()).toEqual({ accepted: 20, rejected: 20, unreviewed: 11 });
    } finally {
      ledger.close();
    }

    // A reload: the page finds each decision again, by filter.
    await page.reload();
    await page.waitForSelector('body[data-ready="1"]');
    expect(await page.locator('#filter option').allTextContents()).toEqual([
      'not yet reviewed (11)',
      'accepted (20)',
      'rejected (20)',
      'failed (0)',
      'held (0)',
      'all done (51)',
    ]);
    const seen = new Map<number, Expected>();
    for (const filter of ['accepted', 'rejected', 'unreviewed']) {
      await show(page, filter);
      const n = Number((await page.textContent('#position'))!.split(' / ')[1]);
      for (let k = 0; k < n; k++) {
        const id = await current();
        const text = await page.textContent('#decision');
        const why = (await page.textContent('#decision-why')) || null;
        seen.set(id, {
          decision: text === 'accepted' ? 'accept' : text === 'rejected' ? 'reject' : null,
          why: why === null ? null : why.replace(/^“|”$/g, ''),
        });
        await page.keyboard.press('ArrowRight');
      }
    }
    for (const [id, e] of expected) expect(seen.get(id), `photo ${id} after the reload`).toEqual(e);
    expect(errors).toEqual([]);
    expect(foreign).toEqual([]);
  });

  it('shows a name with terminal escapes, markup and a bidi override as text', async () => {
    await show(page, 'all');
    const shown = shownText(HOSTILE);
    expect(shown).toContain('\\x1b[31m');
    expect(shown).toContain('\\u202e');
    for (let k = 0; k < 51 && (await page.textContent('#path')) !== shown; k++) await page.keyboard.press('ArrowRight');
    expect(await page.textContent('#path')).toBe(shown);
    expect(await page.evaluate(() => (globalThis as any).__pwned)).toBeUndefined();
    expect(await page.locator('script').count()).toBe(1);
    expect(await page.locator('#info img, #path *').count()).toBe(0);
    // Its output shows; zoomed to 100 %, input and output move together.
    await page.waitForFunction(() => (globalThis as any).document.getElementById('output-img').naturalWidth > 0);
    await page.waitForFunction(() => (globalThis as any).document.getElementById('input-img').naturalWidth > 0);
    await page.keyboard.press('z');
    const scrolls = () =>
      page.evaluate(() => {
        const d = (globalThis as any).document;
        const v = (id: string) => ({ x: d.getElementById(id).scrollLeft as number, y: d.getElementById(id).scrollTop as number });
        return { input: v('input-view'), output: v('output-view'), width: d.getElementById('output-img').naturalWidth as number };
      });
    const centred = await scrolls();
    expect(centred.width).toBe(2400);
    expect(centred.output.x).toBeGreaterThan(0);
    expect(centred.input).toEqual(centred.output);
    await page.keyboard.press('Shift+ArrowRight');
    await page.keyboard.press('Shift+ArrowDown');
    await page.waitForFunction((x: number) => (globalThis as any).document.getElementById('input-view').scrollLeft > x, centred.input.x);
    const moved = await scrolls();
    expect(moved.output.x).toBeGreaterThan(centred.output.x);
    expect(moved.output.y).toBeGreaterThan(centred.output.y);
    expect(moved.input).toEqual(moved.output);
    await page.keyboard.press('z');
    // A decision about it is recorded like any other.
    const r = await Promise.all([page.waitForResponse((x) => x.url().endsWith('/decision')), page.keyboard.press('p')]);
    expect(r[0].status()).toBe(200);
    expect(errors).toEqual([]);
  });

  it('a photo a run finishes while the page is open appears without a reload; a decision made elsewhere too', async () => {
    await show(page, 'unreviewed');
    const before = await page.locator('#filter option').allTextContents();
    expect(before[0]).toBe('not yet reviewed (11)');
    await writePhoto(path.join(job.inputDir, 'late/arrival.jpg'), 77);
    const s = await simulate({ job, ledger: job.ledgerFile });
    s.ledger.close();
    await page.waitForFunction(
      () => (globalThis as any).document.getElementById('filter').options[0].textContent === 'not yet reviewed (12)',
    );
    expect(await page.textContent('#position')).toMatch(/ \/ 12$/);
    // Another client's decision (the library, a second page) shows in this one's counts.
    await decide(job.jobsFile, 'late/arrival.jpg', 'accept');
    const accepted = Number(/\((\d+)\)/.exec(before[1]!)![1]);
    await page.waitForFunction(
      (n: number) => (globalThis as any).document.getElementById('filter').options[1].textContent === `accepted (${n})`,
      accepted + 1,
    );
    expect(errors).toEqual([]);
  });
});
