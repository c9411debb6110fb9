import http from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { fingerprintKey } from '../../src/spec/key.js';
import { startSim } from '../../src/sim/server.js';
import { runCli } from '../helpers/cli.js';
import { listenLocal } from '../helpers/http.js';
import { makeJob, makeTempDir } from '../helpers/job.js';
import { createsInFlight, look, waitForLedger } from '../helpers/ledger.js';

/**
 * A run killed (kill -9, a power cut, an OOM kill) just after three creates left, their
 * answers lost: the three tasks ran a few seconds at the service and ended. The rerun holds
 * those three photos (L2: an operator decides) and must not sit out the ten minutes such a
 * task could have run (the task bound, before any task was seen to end): it asks the
 * service with a create of the next photo, which is accepted, and goes on. `status` says
 * why slots are counted busy while they are, and until when at most.
 */

const KEY = 'resume-held-key-58e2a9c41';
const FP = fingerprintKey(KEY);
const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** A job of 12 photos whose run was killed with three creates in flight (their answers never came), and the three tasks since ended. */
async function killedWithThreeInFlight() {
  const sim = await startSim({ keys: [KEY], seed: 41, latency: { kind: 'uniform', minMs: 2000, maxMs: 4000 } });
  cleanups.push(() => sim.close());
  // In front of the simulator: while `hang` is set, a create reaches it (its task is made)
  // and its answer never comes back, as when a run dies with its creates in flight.
  const state = { hang: true };
  const target = new URL(sim.apiUrl);
  const proxy = await listenLocal((req, res) => {
    const up = http.request(
      { host: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers },
      (answer) => {
        if (state.hang && req.url?.endsWith('/generate')) {
          answer.resume();
          return;
        }
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  cleanups.push(() => proxy.close());
  const job = await makeJob({ photos: 12, steps: [{ capability: 'enhance' }] });
  cleanups.push(job.cleanup);
  const env = { DARKROOM_TEST_KEY: KEY, DARKROOM_STATE_DIR: `${makeTempDir('darkroom-resume-')}/state` };
  const args = ['run', job.jobsFile, '--base-url', proxy.origin, '--quiet'];

  // The run sends its three creates and is killed while they hang.
  const first = runCli(args, env);
  await waitForLedger(job.ledgerFile, (l) => createsInFlight(l) === 3);
  for (let i = 0; i < 100 && sim.model.audit().tasks < 3; i++) await new Promise((r) => setTimeout(r, 50));
  first.child.kill('SIGKILL');
  await first;
  expect(sim.model.audit().tasks).toBe(3);
  // Their tasks end at the service (2–4 s each).
  for (let i = 0; i < 200 && sim.model.audit().keys[FP]!.activeNow > 0; i++) await new Promise((r) => setTimeout(r, 50));
  expect(sim.model.audit().keys[FP]!.activeNow).toBe(0);
  return { sim, state, job, env, args, tasksEnded: Date.now() };
}

interface HeldSlotsJson {
  readonly held: number;
  readonly heldSlots: { key: string; slots: number; deadRun: number; heldCreates: number; untilMs: number; freedBy: string }[];
}

describe('a run killed with three creates in flight, their tasks long ended', () => {
  it("the rerun finishes the other photos within a minute of the tasks' ends, one create each, refused at most as probes; status shows the held slots while they last", async () => {
    const { sim, state, job, env, args, tasksEnded } = await killedWithThreeInFlight();

    // status: the three slots a run that stopped left counted busy, until when, and what frees them.
    const before = await runCli(['status', job.jobsFile], env);
    expect(before.stdout).toMatch(
      /^slots    k_[0-9a-f]{12}: 3 counted busy by a stopped run's creates in flight, until \d\d:\d\d:\d\d at most; a run asks the service before then; `darkroom retry --held` frees them$/m,
    );
    const beforeJson = JSON.parse((await runCli(['status', job.jobsFile, '--json'], env)).stdout) as HeldSlotsJson;
    expect(beforeJson.heldSlots).toEqual([
      { key: FP, slots: 3, heldCreates: 0, deadRun: 3, deadTasks: 0, untilMs: expect.any(Number), freedBy: 'darkroom retry --held' },
    ]);
    expect(beforeJson.heldSlots[0]!.untilMs).toBeGreaterThan(Date.now() + 5 * 60_000);

    // The rerun: the service answers again.
    state.hang = false;
    const second = runCli(args, env, { timeoutMs: 120_000 });
    // Once it has held the three creates (its recovery), and before its first create: status
    // shows the slots counted busy by held creates.
    // The second run's recovery: the three creates in flight at the kill are ambiguous, their photos held (§ L2).
    await waitForLedger(job.ledgerFile, (l) => l.held.list(['ambiguous']).length === 3);
    const during = JSON.parse((await runCli(['status', job.jobsFile, '--json'], env)).stdout) as HeldSlotsJson;
    // (Its first create, a probe, waits 15 s from the held creates' give-up: no task was seen to end.)
    expect(look<{ n: number }>(job.ledgerFile, "SELECT COUNT(*) AS n FROM submissions WHERE state <> 'ambiguous'")[0]!.n).toBe(0);
    expect(during.heldSlots.map((h) => h.heldCreates)).toEqual([3]);
    const r = await second;
    const finished = Date.now();

    expect(r.code, r.stderr).toBe(1); // the three held photos wait for the operator
    expect(r.stdout).toMatch(/12 total · 9 done · 0 failed · 3 held · 0 pending/);
    expect(finished - tasksEnded).toBeLessThan(60_000);
    // One accepted create per photo: the nine created now, the three held ones never resent.
    const audit = sim.model.audit();
    expect(audit.tasks).toBe(12);
    expect(Object.values(audit.createsPerSource).every((n) => n === 1)).toBe(true);
    expect(look<{ n: number }>(job.ledgerFile, "SELECT COUNT(*) AS n FROM submissions WHERE state = 'accepted'")[0]!.n).toBe(9);
    // No 429 but on api_key_active_tasks (a probe the service refused, no credit).
    const k = audit.keys[FP]!;
    expect(k.rejected429).toBe(k.rejectedByScope.api_key_active_tasks ?? 0);
    console.log(
      `resumed: 9 photos done ${((finished - tasksEnded) / 1000).toFixed(1)} s after the held tasks ended; ${k.rejected429} create(s) refused (api_key_active_tasks)`,
    );

    // The held creates' slots were shown free by the creates the service accepted: none counted now.
    const after = JSON.parse((await runCli(['status', job.jobsFile, '--json'], env)).stdout) as HeldSlotsJson;
    expect(after).toMatchObject({ held: 3, heldSlots: [] });
  }, 180_000);

  it("`retry --held` lists the stopped run's creates in flight and frees their slots: the next run creates at once", async () => {
    const { sim, state, job, env, args } = await killedWithThreeInFlight();
    const retry = await runCli(['retry', '--held', job.jobsFile, '--yes'], env);
    expect(retry.code, retry.stderr).toBe(0);
    expect(retry.stderr).toMatch(/^3 photo\(s\) held:$/m);
    expect(retry.stderr.match(/create outcome unknown/g)).toHaveLength(3);
    expect(retry.stdout).toMatch(/^re-queued 3 photo\(s\): 3 to be created again \(a second charge is possible\)/);
    const status = JSON.parse((await runCli(['status', job.jobsFile, '--json'], env)).stdout) as HeldSlotsJson;
    expect(status).toMatchObject({ held: 0, heldSlots: [] });

    state.hang = false;
    const started = Date.now();
    let firstCreate = 0;
    const run = runCli(args, env, { timeoutMs: 120_000 });
    for (let i = 0; i < 400 && sim.model.audit().tasks === 3; i++) await new Promise((r) => setTimeout(r, 50));
    firstCreate = Date.now();
    const r = await run;
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/12 total · 12 done/);
    // At once (discovery, first contact, uploads), not after a probe's wait.
    expect(firstCreate - started).toBeLessThan(10_000);
    // The three re-created photos were charged twice: the operator's choice.
    expect(Object.values(sim.model.audit().createsPerSource).sort()).toEqual([...Array(9).fill(1), 2, 2, 2]);
  }, 180_000);
});
