import { readdirSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { formatStatus } from '../../src/cli/commands/format.js';
import { Ledger } from '../../src/ledger/index.js';
import { renderReport } from '../../src/report/index.js';
import type { FetchedResult } from '../../src/run/stages/result.js';
import { makeJob } from '../helpers/job.js';
import { simulate } from '../helpers/simulate.js';
import { createsPerPhoto } from './helpers.js';
import { look as query } from '../helpers/ledger.js';

/**
 * Issue 12, point 1: a paid result is never given up. A task that reached SUCCESS stays
 * succeeded whatever happens to its download: retried with backoff while the run has work,
 * then for at most limits.downloadPatienceMinutes, then reported "paid, not yet downloaded"
 * (never failed); the next run downloads it first, creating nothing.
 */

const cleanups: (() => void)[] = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

const MIN = 60_000;
const unavailable = (): FetchedResult => ({ status: 503, headers: { 'retry-after': '5' }, body: Buffer.alloc(0) });

describe("a result-host outage longer than the run's patience", () => {
  it('leaves every photo paid-for and pending, none failed; the rerun downloads them all with one create each', async () => {
    const job = await makeJob({ photos: 12, steps: [{ capability: 'enhance' }] });
    const ledger = Ledger.open(job.ledgerFile);
    cleanups.push(job.cleanup, () => ledger.close());
    let down = true;
    let gets = 0;
    const r1 = await simulate({
      job,
      ledger,
      resultIntercept: (_url, forward) => {
        gets++;
        return down ? Promise.resolve(unavailable()) : forward();
      },
    });

    // Every task succeeded (the service charged for 12), no result is on disk, none failed.
    expect(r1.result.status).toMatchObject({ total: 12, done: 0, failed: 0, held: 0, pending: 12, paidNotDownloaded: 12 });
    expect(r1.result.exitCode).toBe(1);
    expect(r1.result.status.states.succeeded).toBe(12);
    expect(Object.values(r1.audit.createsPerSource)).toEqual(Array(12).fill(1));
    expect(query(job.ledgerFile, "SELECT COUNT(*) AS n FROM transitions WHERE to_state = 'failed'")).toEqual([{ n: 0 }]);
    // Retried with backoff, not once each: the host was asked again and again.
    expect(gets).toBeGreaterThan(3 * 12);
    // The run kept trying for its patience (10 min by default) after the last task ended, then stopped.
    const lastPaid = query<{ t: number }>(
      job.ledgerFile,
      "SELECT MAX(at_ms) AS t FROM transitions WHERE from_state = 'active' AND to_state = 'succeeded'",
    )[0]!.t;
    expect(r1.endMs - lastPaid).toBeGreaterThanOrEqual(10 * MIN);
    expect(r1.endMs - lastPaid).toBeLessThan(11 * MIN);
    // What the operator reads at the end of the run, and in `status`.
    const text = formatStatus(r1.result.status, job.ledgerFile, undefined, 'jobs.yaml');
    expect(text).toContain('12 paid, not yet downloaded: run `darkroom run jobs.yaml` again to fetch them');
    expect(text).toMatch(/result host answered HTTP 503/);
    expect(r1.result.status.problems).toEqual([]);
    // And in the morning report: pending, said apart as paid for and not yet downloaded.
    const page = renderReport({
      data: ledger.report({}),
      jobsFile: null,
      ledgerFile: 'darkroom.db',
      inputDir: null,
      outputDir: null,
      generatedMs: r1.endMs,
      rows: [],
      thumbsHref: null,
      credits: { known: 0, unknown: [], tasks: 0, source: 'test' },
    });
    expect(page).toContain('pending <small>(12 paid, not yet downloaded)</small>');

    // The host is back: the next run downloads every result first, and creates nothing.
    down = false;
    const r2 = await simulate({ job, ledger, model: r1.model, clock: r1.clock, resultIntercept: (_url, forward) => forward() });
    expect(r2.result.status).toMatchObject({ total: 12, done: 12, failed: 0, pending: 0, paidNotDownloaded: 0 });
    expect(r2.result.exitCode).toBe(0);
    expect(createsPerPhoto(job, job.sizes.keys(), r2.audit.createsPerSource)).toEqual(
      Object.fromEntries([...job.sizes.keys()].map((k) => [k, 1])),
    );
    const outputs = readdirSync(job.outputDir, { recursive: true })
      .map(String)
      .filter((f) => /\.(jpg|png|webp)$/.test(f));
    expect(outputs).toHaveLength(12);
    // Downloaded first: the second run made no API call of any kind before they were all done.
    expect(r2.endMs - r2.startMs).toBeLessThan(MIN);
    const calls2 = query<{ n: number }>(job.ledgerFile, 'SELECT COUNT(*) AS n FROM calls WHERE at_ms >= ?', r2.startMs)[0]!.n;
    expect(calls2).toBe(0);
  });
});

describe('a service that keeps handing out result URLs that do not work', () => {
  it('is asked for a fresh URL three times at once, then only after a wait: the photos stay paid-for, never failed', async () => {
    const job = await makeJob({ photos: 3, steps: [{ capability: 'enhance' }] });
    const ledger = Ledger.open(job.ledgerFile);
    cleanups.push(job.cleanup, () => ledger.close());
    // Every URL, the first and every fresh one a poll hands out, answers 410 Gone.
    const r = await simulate({ job, ledger, resultIntercept: async () => ({ status: 410, headers: {}, body: Buffer.alloc(0) }) });
    expect(r.result.status).toMatchObject({ total: 3, done: 0, failed: 0, pending: 3, paidNotDownloaded: 3 });
    expect(Object.values(r.audit.createsPerSource)).toEqual([1, 1, 1]);
    const refreshes = query<{ n: number }>(job.ledgerFile, 'SELECT url_refreshes AS n FROM attempts').map((a) => a.n);
    // 3 at once, then one after each wait within the run's 10 min of patience. The waits are
    // drawn with full jitter, 1 s plus up to twice the last (download.ts, backoff.ts fullJitter):
    // some 10 fit in the patience on average, 11 or 12 on low draws, never the dozens a
    // refresh at each dead link would make.
    for (const n of refreshes) {
      expect(n).toBeGreaterThan(3);
      expect(n).toBeLessThanOrEqual(3 + 12);
    }
    // (A photo whose last event was a fresh URL, handed out as the run's patience ended, has no reason to show.)
    const reasons = r.result.status.notDownloaded.map((x) => x.reason).filter((x) => x !== null);
    expect(reasons.length).toBeGreaterThan(0);
    for (const reason of reasons)
      expect(reason).toMatch(
        /result URL expired \(HTTP (403|404|410) from http:\/\/results\.invalid\), after \d+ fresh URL\(s\) from the service; asking for another later/,
      );

    // Links that work again: the next run fetches a fresh one for each photo and downloads it, creating nothing.
    const again = await simulate({ job, ledger, model: r.model, clock: r.clock });
    expect(again.result.status).toMatchObject({ total: 3, done: 3, failed: 0, pending: 0 });
    expect(Object.values(again.audit.createsPerSource)).toEqual([1, 1, 1]);
  });
});
