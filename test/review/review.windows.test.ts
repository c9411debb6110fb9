import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type Database from 'better-sqlite3';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Ledger } from '../../src/ledger/index.js';
import { ReviewCounter } from '../../src/review/counts.js';
import { startReviewServer, type ReviewServer } from '../../src/review/server.js';
import { launchBrowser } from '../helpers/browser.js';
import { discovered, putAt } from '../helpers/discovered.js';
import { asPage, raw } from './fixture.js';

/**
 * The review page over an archive larger than what it holds: the server answers a window of a
 * list at a time (200 photos, the next or the previous ones by path on request), with the
 * lists' counts over every folder and in each, kept from what changed; the page walks a list
 * past its first window and back with the arrow keys.
 */
const PHOTOS = 620;
interface Listed {
  id: number;
  p: string;
  s: string;
  fi: number;
  decision: string | null;
}
interface Answer {
  cursor: string;
  more?: boolean;
  photos: Listed[];
  counts?: Record<string, number>;
  folders?: { i: number; f: string; c: Record<string, number> }[];
}

const nameOf = (i: number) =>
  i % 7 === 0
    ? `top-${String(i).padStart(4, '0')}.jpg`
    : `${i % 2 ? 'b' : 'a'}${i % 5 === 0 ? '/c' : ''}/${String(i).padStart(4, '0')}.jpg`;

let dir: string;
let file: string;
let server: ReviewServer;
let browser: Browser | undefined;

function stateOf(id: number): 'done' | 'failed' | 'held' {
  return id % 31 === 0 ? 'failed' : id % 43 === 0 ? 'held' : 'done';
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'darkroom-review-windows-'));
  file = path.join(dir, 'darkroom.db');
  const l = Ledger.open(file);
  (l as unknown as { db: Database.Database }).db.transaction(() => {
    discovered(
      l,
      Array.from({ length: PHOTOS }, (_, i) => nameOf(i)),
    );
    for (let id = 1; id <= PHOTOS; id++) putAt(l, id, 0, stateOf(id), 1);
    for (let id = 1; id <= PHOTOS; id += 9) if (stateOf(id) === 'done') l.reviews.record(id, id % 2 ? 'accept' : 'reject', null);
  })();
  l.close();
  server = await startReviewServer({ ledgerFile: file });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function get(q: string): Promise<Answer> {
  const r = await raw(server.port, { path: `/api/photos${q}`, headers: asPage(server.port, server.token).cookie });
  expect(r.status, r.body).toBe(200);
  return JSON.parse(r.body) as Answer;
}

describe('the review page over more photos than it holds', () => {
  it('answers a list a window at a time, in path order, after or before a photo, by folder', async () => {
    const l = Ledger.open(file, { readonly: true });
    const every = l.reviews
      .photos()
      .photos.map((p) => p.path)
      .sort();
    const counts = l.reviews.counts();
    l.close();

    const first = await get('');
    expect(first.photos).toHaveLength(200);
    expect(first.more).toBe(true);
    const walked: string[] = first.photos.map((p) => p.p);
    for (let a = first; a.more;) {
      a = await get(`?after=${encodeURIComponent(walked.at(-1)!)}`);
      walked.push(...a.photos.map((p) => p.p));
    }
    expect(walked).toEqual(every);
    const back = await get(`?before=${encodeURIComponent(every[450]!)}`);
    expect(back.photos.map((p) => p.p)).toEqual(every.slice(250, 450));
    expect(back.more).toBe(true);

    expect(first.counts).toMatchObject({ unreviewed: counts.unreviewed, accepted: counts.accepted, rejected: counts.rejected });
    expect(first.counts!['all']).toBe(counts.accepted + counts.rejected + counts.unreviewed);
    const held = await get('?filter=held&limit=1000');
    expect(held.photos.every((p) => p.s === 'held')).toBe(true);
    expect(held.photos).toHaveLength(first.counts!['held']!);
    const b = first.folders!.find((f) => f.f === 'b')!;
    const inB = await get(`?filter=all&folder=${b.i}&limit=1000`);
    expect(inB.photos.length).toBe(b.c['all']);
    expect(inB.photos.every((p) => /^b\/\d+\.jpg$/.test(p.p) && p.fi === b.i)).toBe(true);
    expect((await raw(server.port, { path: '/api/photos?filter=nope', headers: asPage(server.port, server.token).cookie })).status).toBe(
      400,
    );
  });

  it('a poll carries what changed since, and the counts moved by it', async () => {
    const start = await get('');
    const l = Ledger.open(file);
    const id = l.items.all().find((i) => i.state === 'done' && l.reviews.photo(i.id)!.decision === null)!.id;
    l.reviews.record(id, 'reject', l.reviews.photo(id)!.sha256, 'soft');
    l.close();
    const poll = await get(`?since=${start.cursor}`);
    expect(poll.photos.map((p) => p.id)).toEqual([id]);
    expect(poll.counts).toMatchObject({ rejected: start.counts!['rejected']! + 1, unreviewed: start.counts!['unreviewed']! - 1 });
    expect((await get(`?since=${poll.cursor}`)).photos).toEqual([]);
  });

  it('counts the lists a part at a time, changes between parts included', () => {
    const l = Ledger.open(file);
    try {
      const parts = new ReviewCounter(l, 100);
      expect(parts.buildPart()).toBe(true);
      expect(parts.ready).toBe(false);
      // A decision about a photo counted already, and one about a photo not counted yet.
      for (const id of [3, 600]) {
        parts.update();
        l.reviews.record(id, 'accept', l.reviews.photo(id)!.sha256);
      }
      while (parts.buildPart()) parts.update();
      parts.update();
      expect(parts.ready).toBe(true);
      const whole = new ReviewCounter(l);
      while (whole.buildPart());
      expect(parts.summary()).toEqual(whole.summary());
      expect(parts.summary().counts).toMatchObject({ accepted: l.reviews.counts().accepted });
    } finally {
      l.close();
    }
  });

  it('walks a list past its first window and back with the arrow keys', async () => {
    const unreviewed = (await get('?filter=unreviewed&limit=1000')).photos.map((p) => p.p);
    browser = await launchBrowser();
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(server.url);
    await page.waitForSelector('body[data-ready="1"]');
    expect(await page.textContent('#position')).toBe(`1 / ${unreviewed.length}`);
    for (let k = 0; k < 205; k++) await page.keyboard.press('ArrowRight');
    await page.waitForFunction(
      (n: number) => (globalThis as any).document.getElementById('position').textContent.startsWith(`${n} /`),
      206,
    );
    expect(await page.textContent('#path')).toBe(unreviewed[205]);
    for (let k = 0; k < 205; k++) await page.keyboard.press('ArrowLeft');
    await page.waitForFunction(() => (globalThis as any).document.getElementById('position').textContent.startsWith('1 /'));
    expect(await page.textContent('#path')).toBe(unreviewed[0]);
    expect(errors).toEqual([]);
  }, 120_000);
});
