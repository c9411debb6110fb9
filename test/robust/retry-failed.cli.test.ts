import { existsSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WireResponse } from '../../src/api/index.js';
import { retryCost } from '../../src/cli/commands/retryFailed.js';
import { Ledger } from '../../src/ledger/index.js';
import { runCli, runOnTty } from '../helpers/cli.js';
import { makeJob } from '../helpers/job.js';
import { simulate } from '../helpers/simulate.js';
import { createsPerPhoto } from './helpers.js';
import { look as query } from '../helpers/ledger.js';

/**
 * Issue 12, point 1, the operator's side: `darkroom retry --failed` lists what failed, says
 * what retrying costs, asks (as `retry --held` does; --yes skips), and re-queues. A photo
 * an older darkroom failed after its task had succeeded only needs its download: it goes
 * back to `succeeded`, at no cost. Skipped inputs (bad files) are left alone, and it says so.
 */

/**
 * What a darkroom older than issue 12 left after a result-host outage: a photo whose task
 * succeeded (paid, its result URL recorded), marked failed by its download. Written with
 * SQL here because no code of today can make that move any more (the transition table
 * forbids downloading → failed).
 */
function failAsOldDarkroomDid(file: string, itemId: number): void {
  const db = new Database(file);
  try {
    db.transaction(() => {
      db.prepare("UPDATE items SET state = 'failed', reason = ? WHERE id = ?").run(
        'download of x failed: result host answered HTTP 503',
        itemId,
      );
      db.prepare(
        "INSERT INTO transitions (item_id, at_ms, from_state, to_state, note) VALUES (?, 0, 'downloading', 'failed', 'old darkroom')",
      ).run(itemId);
    })();
  } finally {
    db.close();
  }
}

const stateOf = (file: string, rel: string) => query<{ state: string }>(file, 'SELECT state FROM items WHERE rel_path = ?', rel)[0]?.state;

describe('darkroom retry --failed', () => {
  let job: Awaited<ReturnType<typeof makeJob>>;
  let ledger: Ledger;
  let first: Awaited<ReturnType<typeof simulate>>;
  let errored: string;
  let paidOnly: string;

  beforeAll(async () => {
    job = await makeJob({ photos: 3, steps: [{ capability: 'enhance' }] });
    writeFileSync(path.join(job.inputDir, 'broken.jpg'), 'not an image at all');
    ledger = Ledger.open(job.ledgerFile);
    let erroredTask: string | undefined;
    first = await simulate({
      job,
      ledger,
      // The first task to finish ends ERROR (not retryable): that photo really failed.
      intercept: async (req, forward): Promise<WireResponse> => {
        const res = await forward();
        const m = /\/tasks\/[^/]+\/([^/?]+)/.exec(req.url);
        const body = res.body.toString();
        if (m && body.includes('"SUCCESS"') && (erroredTask ?? (erroredTask = m[1])) === m[1]) {
          return { ...res, body: Buffer.from(body.replace('"SUCCESS"', '"ERROR"')) };
        }
        return res;
      },
    });
    expect(first.result.status).toMatchObject({ total: 3, done: 2, failed: 1, skipped: 1 });
    errored = first.result.status.problems.find((p) => p.state === 'failed')!.path;
    // Another photo failed the old way: its task succeeded, its download "failed", its file is not there.
    const done = ledger.items.all().find((i) => i.state === 'done')!;
    paidOnly = done.rel_path;
    rmSync(done.output_path!);
    ledger.close();
    failAsOldDarkroomDid(job.ledgerFile, done.id);
    ledger = Ledger.open(job.ledgerFile);
  });

  afterAll(() => {
    ledger?.close();
    job?.cleanup();
  });

  it('without a terminal and without --yes: lists, says the cost, refuses (exit 2), changes nothing', async () => {
    const r = await runCli(['retry', '--failed', job.jobsFile]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/2 photo\(s\) failed:/);
    expect(r.stderr).toContain(`${errored}  step 1 (enhance): enhance task`);
    expect(r.stderr).toMatch(/ended ERROR \(not retryable\)/);
    expect(r.stderr).toContain(`${paidOnly}  step 1 (enhance): download of x failed`);
    expect(r.stderr).toMatch(
      /1 of them only need their download: the task succeeded and was paid for; they go back to be downloaded, at no cost/,
    );
    expect(r.stderr).toMatch(/1 of them will be created again: 1 create\(s\), 1 credit\(s\)/);
    expect(r.stderr).toMatch(/1 skipped input\(s\) are not retried by this: they are bad files/);
    expect(r.stderr).toMatch(/retry --failed needs a yes, and there is no terminal to ask on: .* --yes/);
    expect(stateOf(job.ledgerFile, errored)).toBe('failed');
    expect(stateOf(job.ledgerFile, paidOnly)).toBe('failed');
  });

  it('asks on a terminal: no changes nothing', async () => {
    const r = await runOnTty(['retry', '--failed', job.jobsFile], 'n');
    expect(r.output).toMatch(/1 create\(s\), 1 credit\(s\)/);
    expect(r.output).toMatch(/Re-queue 2 failed photo\(s\)\? \[y\/N\]/);
    expect(r.output).toMatch(/nothing changed: the failed photos stay failed/);
    expect(r.code).toBe(0);
    expect(stateOf(job.ledgerFile, errored)).toBe('failed');
  });

  it('--yes re-queues: the paid one to be downloaded, the other to be created again; skipped stays skipped', async () => {
    const r = await runCli(['retry', '--failed', '--yes', job.jobsFile]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      /re-queued 2 photo\(s\): 1 to be downloaded \(paid already, no cost\); 1 to be created again \(1 credit\(s\)\)\. Run `darkroom run .*` to continue\./,
    );
    expect(stateOf(job.ledgerFile, paidOnly)).toBe('succeeded');
    expect(stateOf(job.ledgerFile, errored)).toBe('queued');
    expect(stateOf(job.ledgerFile, 'broken.jpg')).toBe('skipped');
    const notes = query<{ note: string }>(job.ledgerFile, "SELECT note FROM transitions WHERE from_state = 'failed' ORDER BY id");
    expect(notes.map((n) => n.note)).toEqual([
      'darkroom retry --failed: paid, only the download was missing',
      'darkroom retry --failed: uploaded and created again',
    ]);
  });

  it('the next run downloads the paid one without a create, and creates the other once more', async () => {
    const again = await simulate({ job, ledger, model: first.model, clock: first.clock });
    expect(again.result.status).toMatchObject({ total: 3, done: 3, failed: 0, skipped: 1, pending: 0 });
    const creates = createsPerPhoto(job, [paidOnly, errored], again.audit.createsPerSource);
    expect(creates).toEqual({ [paidOnly]: 1, [errored]: 2 });
    const item = ledger.items.all().find((i) => i.rel_path === paidOnly)!;
    expect(existsSync(item.output_path!)).toBe(true);
  });

  it('a photo that only needs its download costs nothing, so it needs no yes', async () => {
    const done = ledger.items.all().find((i) => i.state === 'done' && i.rel_path !== errored)!;
    rmSync(done.output_path!);
    ledger.close();
    failAsOldDarkroomDid(job.ledgerFile, done.id);
    ledger = Ledger.open(job.ledgerFile);
    const r = await runCli(['retry', '--failed', job.jobsFile]);
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/1 photo\(s\) failed:/);
    expect(r.stderr).toMatch(/at no cost/);
    expect(r.stderr).not.toMatch(/create\(s\)/);
    expect(r.stdout).toMatch(/re-queued 1 photo\(s\): 1 to be downloaded \(paid already, no cost\)/);
    expect(stateOf(job.ledgerFile, done.rel_path)).toBe('succeeded');
  });

  it('with nothing failed it says so, and names the skipped inputs it leaves alone', async () => {
    await simulate({ job, ledger, model: first.model, clock: first.clock });
    const r = await runCli(['retry', '--failed', '--yes', job.jobsFile]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^nothing has failed in /);
    expect(r.stdout).toMatch(/1 skipped input\(s\) are not retried by this/);
  });

  it('--held and --failed together is a usage error', async () => {
    const r = await runCli(['retry', '--held', '--failed', job.jobsFile]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--held, --failed or --rejected \(one at a time\)/);
    const both = await runCli(['retry', '--failed', '--rejected', job.jobsFile]);
    expect(both.code).toBe(2);
    const mode = await runCli(['retry', '--failed', '--mode', 'portrait', job.jobsFile]);
    expect(mode.code).toBe(2);
    expect(mode.stderr).toMatch(/--mode goes with --rejected/);
  });
});

describe('the cost of retrying', () => {
  const failed = (fromStep: number, kind: 'create' | 'download' = 'create') => ({
    id: 1,
    path: 'p.jpg',
    step: fromStep,
    reason: null,
    kind,
    fromStep,
  });

  it('counts a create per step from where each photo starts again, priced by the jobs file or the spec', () => {
    expect(retryCost([failed(0), failed(1)], ['enhance', 'image2image'], {})).toEqual({ creates: 3, credits: 3, unpriced: [] });
    expect(retryCost([failed(0)], ['restore', 'upscale'], { restore: 2, upscale: 3 })).toEqual({ creates: 2, credits: 5, unpriced: [] });
    expect(retryCost([failed(0, 'download')], ['enhance'], {})).toEqual({ creates: 0, credits: 0, unpriced: [] });
  });

  it('says "unknown" where the spec gives no price and the jobs file none either', () => {
    expect(retryCost([failed(0)], ['restore', 'enhance'], {})).toEqual({ creates: 2, credits: null, unpriced: ['restore'] });
  });
});
