import { createHash } from 'node:crypto';
import { existsSync, linkSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decide, decisions, retry, review } from '../../src/index.js';
import Database from 'better-sqlite3';
import { Ledger } from '../../src/ledger/index.js';
import { startReviewServer } from '../../src/review/server.js';
import type { TestJob } from '../helpers/job.js';
import { simulate, SIM_KEY } from '../helpers/simulate.js';
import { createsPerPhoto } from '../robust/helpers.js';
import { asPage, doneJob, raw } from './fixture.js';

/**
 * The review from a program: review() serves the page until close(); decide() and decisions()
 * record and read; retry({ rejected }) sends the rejected back, and a retry a kill interrupted
 * (a kept name made, or the old name left) is finished by the next one.
 */

const sha = (f: string) => createHash('sha256').update(readFileSync(f)).digest('hex');

describe('the library: review(), decide(), decisions(), retry({ rejected })', () => {
  let job: TestJob;
  let photos: string[];

  beforeAll(async () => {
    job = await doneJob(5);
    photos = [...job.sizes.keys()].sort();
  });

  afterAll(() => job?.cleanup());

  it('review() serves the page with its token until close()', async () => {
    const page = await review(job.jobsFile);
    try {
      expect(page.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/\?token=[\w-]{43}$/);
      const list = await fetch(new URL('/api/photos', page.url), { headers: { Cookie: '' } });
      expect(list.status).toBe(401);
      const withToken = await fetch(`${new URL(page.url).origin}/api/photos?token=${new URL(page.url).searchParams.get('token')}`);
      expect(withToken.status).toBe(200);
      expect(((await withToken.json()) as { photos: unknown[] }).photos).toHaveLength(5);
    } finally {
      await page.close();
    }
    await expect(fetch(new URL('/api/photos', page.url))).rejects.toThrow();
  });

  it('decide() records a decision about the output as it is; decisions() reads them; a wrong photo or output is REVIEW', async () => {
    await decide(job.jobsFile, photos[0]!, 'accept');
    await decide(job.jobsFile, photos[1]!, 'reject', { reason: 'the sign is unreadable' });
    await decide(job.jobsFile, photos[2]!, 'reject');
    expect(await decide(job.jobsFile, photos[3]!, 'accept')).toMatchObject({ photo: photos[3], decision: 'accept' });
    expect(await decide(job.jobsFile, photos[3]!, 'clear')).toBeNull();
    const r = await decisions(job.jobsFile);
    expect(r.counts).toEqual({ accepted: 1, rejected: 2, unreviewed: 2 });
    expect(r.decisions.map((d) => [d.photo, d.decision, d.reason])).toEqual([
      [photos[0], 'accept', null],
      [photos[1], 'reject', 'the sign is unreadable'],
      [photos[2], 'reject', null],
    ]);
    expect(r.decisions[0]!.outputSha256).toBe(sha(r.decisions[0]!.output!));
    await expect(decide(job.jobsFile, 'no/such.jpg', 'accept')).rejects.toMatchObject({ code: 'REVIEW', exitCode: 2 });
    await expect(decide(job.jobsFile, photos[4]!, 'accept', { sha256: '0'.repeat(64) })).rejects.toMatchObject({
      code: 'REVIEW',
      message: expect.stringMatching(/changed since it was shown/),
    });
  });

  it('retry({ rejected }) after a kill left a kept name made and another photo half sent back: finished, nothing lost', async () => {
    const ledger = Ledger.open(job.ledgerFile);
    const rejected = ledger.reviews.rejected();
    ledger.close();
    expect(rejected).toHaveLength(2);
    // A kill right after the first photo's output got its second name: the next try finds it there.
    const out = rejected[0]!.outputs[0]!;
    const p = path.parse(out.path);
    const kept = path.join(p.dir, `${p.name}.rejected-${out.sha256!.slice(0, 8)}${p.ext}`);
    linkSync(out.path, kept);
    const r = await retry(job.jobsFile, { rejected: true });
    expect(r.recreated).toBe(2);
    expect(r.keptAside).toHaveLength(2);
    expect(r.keptAside).toContain(kept);
    for (const [i, k] of r.keptAside!.entries()) {
      expect(sha(k)).toBe(rejected[i]!.sha256);
      expect(existsSync(rejected[i]!.outputs[0]!.path)).toBe(false);
    }
    // A kill after the transaction, before the old name went: the next retry removes it, the kept one stays.
    linkSync(kept, out.path);
    expect(statSync(out.path).nlink).toBe(2);
    const again = await retry(job.jobsFile, { rejected: true });
    expect(again).toMatchObject({ recreated: 0, keptAside: [] });
    expect(existsSync(out.path)).toBe(false);
    expect(sha(kept)).toBe(out.sha256);
  });

  it('the next run makes them once each; they are not reviewed; the kept outputs stay', async () => {
    const s = await simulate({ job, ledger: job.ledgerFile, keys: { DARKROOM_TEST_KEY: SIM_KEY } });
    try {
      const creates = createsPerPhoto(job, photos, s.audit.createsPerSource);
      expect(Object.values(creates).reduce((a, b) => a + b, 0)).toBe(2);
      expect(creates[photos[1]!]).toBe(1);
      expect(creates[photos[2]!]).toBe(1);
      expect(s.ledger.reviews.counts()).toEqual({ accepted: 1, rejected: 0, unreviewed: 4 });
      for (const k of s.ledger.reviews.allKept()) {
        expect(sha(k.path)).toBe(k.sha256);
        expect(existsSync(k.fromPath)).toBe(true);
      }
    } finally {
      s.ledger.close();
    }
  });

  it('a decision while a run holds the ledger past the busy timeout: 503, nothing written; once free, it is', async () => {
    const server = await startReviewServer({ ledgerFile: job.ledgerFile });
    const holder = new Database(job.ledgerFile);
    try {
      const { post } = asPage(server.port, server.token);
      const l = Ledger.open(job.ledgerFile, { readonly: true });
      const p = l.reviews.photo(l.reviews.idOf(photos[4]!)!)!;
      l.close();
      const body = JSON.stringify({ action: 'reject', sha256: p.sha256, reason: 'busy' });
      holder.exec('BEGIN IMMEDIATE');
      const busy = await raw(server.port, { method: 'POST', path: `/api/photos/${p.id}/decision`, headers: post, body });
      holder.exec('ROLLBACK');
      expect(busy.status).toBe(503);
      expect(JSON.parse(busy.body).error).toMatch(/not saved/);
      expect((await decisions(job.jobsFile)).decisions.find((d) => d.photo === photos[4])).toBeUndefined();
      const ok = await raw(server.port, { method: 'POST', path: `/api/photos/${p.id}/decision`, headers: post, body });
      expect(ok.status).toBe(200);
      expect((await decisions(job.jobsFile)).decisions.find((d) => d.photo === photos[4])).toMatchObject({
        decision: 'reject',
        reason: 'busy',
      });
    } finally {
      holder.close();
      await server.close();
    }
  });
});
