import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WireResponse } from '../../src/api/index.js';
import { Ledger } from '../../src/ledger/index.js';
import { runCli, runOnTty as onTty, testStateDir } from '../helpers/cli.js';
import { makeJob } from '../helpers/job.js';
import { simulate } from '../helpers/simulate.js';
import { createsPerPhoto } from './helpers.js';
import { look as query } from '../helpers/ledger.js';

/**
 * Issue 4, point 1, the operator's side: `darkroom status` lists held photos with the ids
 * to quote to support, and `darkroom retry --held` re-queues them only after a yes.
 */

/** The real CLI on a terminal, with this file's key store. */
const runOnTty = (args: string[], answer: string) => onTty(args, answer, { DARKROOM_STATE_DIR: testStateDir() });

describe('held photos at the command line', () => {
  let job: Awaited<ReturnType<typeof makeJob>>;
  let ledger: Ledger;
  let first: Awaited<ReturnType<typeof simulate>>;
  let heldPath: string;

  beforeAll(async () => {
    job = await makeJob({ photos: 3, steps: [{ capability: 'enhance' }] });
    ledger = Ledger.open(job.ledgerFile);
    let n = 0;
    first = await simulate({
      job,
      ledger,
      intercept: async (req, forward): Promise<WireResponse> => {
        if (req.url.endsWith('/generate') && ++n === 1) {
          await forward(); // the task is made and will be charged, but the answer is a 500
          const body = { code: -1, message: 'internal server error', requestId: 'srv-req-500-7f3a' };
          return { status: 500, headers: { 'x-request-id': 'srv-req-500-7f3a' }, body: Buffer.from(JSON.stringify(body)) };
        }
        return forward();
      },
    });
    heldPath = first.result.status.problems[0]!.path;
  });

  afterAll(() => {
    ledger?.close();
    job?.cleanup();
  });

  it('status lists the held photo with its reason, the X-Request-Id sent and the requestId received', async () => {
    const sent = ledger.submissions.forItem(first.result.status.problems[0]!.id)[0]!.request_id;
    const human = await runCli(['status', job.jobsFile]);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/held:/);
    const line = human.stdout.split('\n').find((l) => l.includes(heldPath))!;
    expect(line).toContain(`X-Request-Id ${sent}`);
    expect(line).toContain('requestId srv-req-500-7f3a');
    expect(line).toMatch(/outcome unknown/);

    const json = JSON.parse((await runCli(['status', job.jobsFile, '--json'])).stdout);
    expect(json).toMatchObject({ total: 3, done: 2, held: 1, pending: 0 });
    expect(json.problems[0]).toMatchObject({ path: heldPath, state: 'held', sentRequestId: sent, requestId: 'srv-req-500-7f3a' });
  });

  it('retry --held without a terminal and without --yes refuses, exit 2, and changes nothing', async () => {
    const r = await runCli(['retry', '--held', job.jobsFile]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/needs a yes, and there is no terminal to ask on/);
    expect(r.stderr).toMatch(/--yes/);
    expect(r.stderr).toMatch(/second/);
    expect(r.stderr).toContain(heldPath);
    expect(query(job.ledgerFile, "SELECT COUNT(*) AS n FROM items WHERE state = 'held'")).toEqual([{ n: 1 }]);
  });

  it('retry --held asks on a terminal: no leaves it held', async () => {
    const r = await runOnTty(['retry', '--held', job.jobsFile], 'n');
    expect(r.output).toMatch(/a second charge|charge a second time/);
    expect(r.output).toMatch(/Re-queue 1 held photo\(s\)\? \[y\/N\]/);
    expect(r.output).toMatch(/nothing changed/);
    expect(r.code).toBe(0);
    expect(query(job.ledgerFile, "SELECT COUNT(*) AS n FROM items WHERE state = 'held'")).toEqual([{ n: 1 }]);
  });

  it('retry --held asks on a terminal: yes re-queues it', async () => {
    const r = await runOnTty(['retry', '--held', job.jobsFile], 'y');
    expect(r.output).toMatch(/re-queued 1 photo\(s\): 1 to be created again/);
    expect(r.code).toBe(0);
    expect(query(job.ledgerFile, 'SELECT state, hold_kind FROM items WHERE rel_path = ?', heldPath)).toEqual([
      { state: 'uploaded', hold_kind: null },
    ]);
    // The operator's decision is on record.
    const notes = query<{ note: string }>(job.ledgerFile, "SELECT note FROM transitions WHERE from_state = 'held'");
    expect(notes.map((n) => n.note)).toEqual(['darkroom retry --held']);
  });

  it('the next run creates it again, so the audit shows the second charge the operator accepted', async () => {
    // retry --held ran on the wall clock (the photo is due from then): the simulated night
    // goes on from that moment, however far the wall clock is from the simulation's start.
    first.clock.advanceTo(Math.max(first.clock.now(), Date.now()));
    const again = await simulate({ job, ledger, model: first.model, clock: first.clock });
    expect(again.result.status).toMatchObject({ total: 3, done: 3, held: 0 });
    expect(createsPerPhoto(job, [heldPath], again.audit.createsPerSource)[heldPath]).toBe(2);
  });

  it('retry --held --yes needs no terminal; with nothing held it says so', async () => {
    const r = await runCli(['retry', '--held', '--yes', job.jobsFile]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/nothing is held/);
  });

  it('retry without --held is a usage error', async () => {
    const r = await runCli(['retry', job.jobsFile]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--held/);
  });
});
