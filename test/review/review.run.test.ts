import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Ledger } from '../../src/ledger/index.js';
import { startReviewServer, type ReviewServer } from '../../src/review/server.js';
import { startSim, type RunningSim } from '../../src/sim/server.js';
import { runCli } from '../helpers/cli.js';
import { makeJob, type TestJob } from '../helpers/job.js';
import { createsPerPhoto } from '../robust/helpers.js';
import { asPage, raw } from './fixture.js';

/**
 * A run and a review on one ledger at once: `darkroom run` writes photo after photo while the
 * review page records a decision about each as it comes; both sides' writes are all there.
 * Then `retry --rejected` makes the rejected ones again, one create each, their rejected
 * outputs kept on disk, and they come back not reviewed.
 */

const KEY = 'review-run-key';
const PHOTOS = 12;

interface Listed {
  id: number;
  p: string;
  s: string;
  h: string | null;
  decision: string | null;
}

describe('darkroom run and darkroom review on one ledger, then retry --rejected', () => {
  let job: TestJob;
  let sim: RunningSim;
  let server: ReviewServer | undefined;
  const env = () => ({ DARKROOM_TEST_KEY: KEY });
  const decidedDuringRun: number[] = [];
  const rejected = new Map<string, { sha: string }>();

  beforeAll(async () => {
    sim = await startSim({ keys: [KEY], seed: 5, latency: { medianMs: 400, sigma: 0.3 } });
    job = await makeJob({ photos: PHOTOS, steps: [{ capability: 'enhance' }], baseUrl: sim.apiUrl });
  });

  afterAll(async () => {
    await server?.close();
    await sim?.close();
    job?.cleanup();
  });

  it('decides each photo as the run finishes it; every write of both sides is in the ledger', async () => {
    const run = runCli(['run', job.jobsFile, '--quiet'], env());
    let exited = false;
    void run.then(() => (exited = true));
    // The ledger appears with the run's first writes; the review opens it beside the run.
    while (!existsSync(job.ledgerFile) && !exited) await new Promise((r) => setTimeout(r, 50));
    await new Promise((r) => setTimeout(r, 300));
    server = await startReviewServer({ ledgerFile: job.ledgerFile });
    const { cookie, post } = asPage(server.port, server.token);
    const decided = new Set<number>();
    let sawRunning = false;
    for (;;) {
      const runDone = exited;
      const list = JSON.parse((await raw(server.port, { path: '/api/photos', headers: cookie })).body) as { photos: Listed[] };
      for (const p of list.photos.filter((x) => x.s === 'done' && !decided.has(x.id))) {
        const action = p.id % 3 === 0 ? 'reject' : 'accept';
        const body = JSON.stringify({ action, sha256: p.h, reason: action === 'reject' ? `invented face ${p.id}` : null });
        const r = await raw(server.port, { method: 'POST', path: `/api/photos/${p.id}/decision`, headers: post, body });
        expect(r.status, r.body).toBe(200);
        decided.add(p.id);
        if (!exited) decidedDuringRun.push(p.id);
        if (action === 'reject') rejected.set(p.p, { sha: p.h! });
      }
      if (!exited && decided.size < PHOTOS) sawRunning = true;
      if (runDone && decided.size >= PHOTOS) break;
      if (runDone && list.photos.filter((x) => x.s === 'done').length === decided.size) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const r = await run;
    expect(r.stderr).not.toMatch(/locked|busy/i);
    expect(r.code, r.stderr).toBe(0);
    expect(sawRunning).toBe(true);
    // Decisions were written while the run was writing.
    expect(decidedDuringRun.length).toBeGreaterThan(0);
    const ledger = Ledger.open(job.ledgerFile, { readonly: true });
    try {
      expect(ledger.status()).toMatchObject({ total: PHOTOS, done: PHOTOS, failed: 0, held: 0, pending: 0 });
      const d = ledger.reviews.decisions();
      expect(d.size).toBe(PHOTOS);
      expect([...d.values()].filter((x) => x.decision === 'reject')).toHaveLength(rejected.size);
      expect(ledger.reviews.counts()).toEqual({ accepted: PHOTOS - rejected.size, rejected: rejected.size, unreviewed: 0 });
    } finally {
      ledger.close();
    }
    const status = await runCli(['status', job.jobsFile, '--json'], env());
    expect(JSON.parse(status.stdout).review).toEqual({ accepted: PHOTOS - rejected.size, rejected: rejected.size, unreviewed: 0 });
  });

  it('retry --rejected says the cost and asks; with --yes it sends them back, their outputs kept aside', async () => {
    const asked = await runCli(['retry', '--rejected', job.jobsFile], env());
    expect(asked.code).toBe(2);
    expect(asked.stderr).toContain(`${rejected.size} photo(s) rejected in review:`);
    expect(asked.stderr).toMatch(new RegExp(`${rejected.size} create\\(s\\), ${rejected.size} credit\\(s\\)`));
    expect(asked.stderr).toMatch(/retry --rejected needs a yes/);
    const wrongMode = await runCli(['retry', '--rejected', job.jobsFile, '--mode', 'sepia', '--yes'], env());
    expect(wrongMode.code).toBe(2);
    expect(wrongMode.stderr).toMatch(/--mode sepia: expected one of general, graphics, portrait, text/);

    const r = await runCli(['retry', '--rejected', job.jobsFile, '--yes', '--mode', 'portrait'], env());
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`re-queued ${rejected.size} rejected photo(s)`);
    const ledger = Ledger.open(job.ledgerFile, { readonly: true });
    try {
      const kept = ledger.reviews.allKept();
      expect(kept).toHaveLength(rejected.size);
      for (const k of kept) {
        // The paid-for bytes, under a name that says so; the output's own name free for the redo.
        expect(k.path).toMatch(/\.rejected-[0-9a-f]{8}\.[a-z]+$/);
        expect(createHash('sha256').update(readFileSync(k.path)).digest('hex')).toBe(k.sha256);
        expect(existsSync(k.fromPath)).toBe(false);
      }
      expect(ledger.status()).toMatchObject({ done: PHOTOS - rejected.size, pending: rejected.size });
    } finally {
      ledger.close();
    }
  });

  it('the next run makes each rejected photo once more (one create each); they come back not reviewed, the rejected outputs still on disk', async () => {
    const before = sim.model.audit().createsPerSource;
    const r = await runCli(['run', job.jobsFile, '--quiet'], env());
    expect(r.code, r.stderr).toBe(0);
    const after = sim.model.audit().createsPerSource;
    const all = [...job.sizes.keys()];
    const was = createsPerPhoto(job, all, before);
    const now = createsPerPhoto(job, all, after);
    for (const rel of all) expect(now[rel]! - was[rel]!, rel).toBe(rejected.has(rel) ? 1 : 0);
    const ledger = Ledger.open(job.ledgerFile, { readonly: true });
    try {
      expect(ledger.status()).toMatchObject({ done: PHOTOS, pending: 0 });
      expect(ledger.reviews.counts()).toEqual({ accepted: PHOTOS - rejected.size, rejected: 0, unreviewed: rejected.size });
      for (const k of ledger.reviews.allKept()) {
        expect(existsSync(k.path)).toBe(true);
        expect(existsSync(k.fromPath)).toBe(true);
        expect(createHash('sha256').update(readFileSync(k.path)).digest('hex')).toBe(k.sha256);
      }
      // Made with the mode asked for: the create's body said so.
      expect(ledger.reviews.redoModeOf(ledger.reviews.allKept()[0]!.itemId)).toBe('portrait');
    } finally {
      ledger.close();
    }
    // The manifest of the accepted alone, and the review column of provenance.csv.
    const m = await runCli(['manifest', job.jobsFile, '--accepted', '--json'], env());
    expect(m.code, m.stderr).toBe(0);
    const summary = JSON.parse(m.stdout);
    expect(summary).toMatchObject({ acceptedOnly: true, outputs: PHOTOS - rejected.size });
    const csv = readFileSync(`${job.outputDir}/provenance.csv`, 'utf8').trim().split('\n');
    expect(csv[0]).toMatch(/,review$/);
    expect(csv.slice(1).every((l) => l.endsWith(',accepted'))).toBe(true);
    const full = await runCli(['manifest', job.jobsFile, '--json'], env());
    expect(JSON.parse(full.stdout)).toMatchObject({ acceptedOnly: false, outputs: PHOTOS });
    const all2 = readFileSync(`${job.outputDir}/provenance.csv`, 'utf8').trim().split('\n').slice(1);
    expect(all2.filter((l) => l.endsWith(','))).toHaveLength(rejected.size);
    // The report says each photo's decision.
    const rep = await runCli(['report', job.jobsFile, '--out', `${job.dir}/report.html`], env());
    expect(rep.code, rep.stderr).toBe(0);
    const html = readFileSync(`${job.dir}/report.html`, 'utf8');
    expect(html.match(/"v":"accept"/g)).toHaveLength(PHOTOS - rejected.size);
    expect(html.match(/"v":null/g)).toHaveLength(rejected.size);
  });
});
