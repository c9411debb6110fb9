import { hostname } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeyStore } from '../../src/keystore/store.js';
import { fingerprintKey } from '../../src/spec/key.js';
import { startSim, type RunningSim } from '../../src/sim/server.js';
import { runCli } from '../helpers/cli.js';
import { makeJob, type TestJob } from '../helpers/job.js';
import { runInTerminal, screenOf } from '../helpers/terminal.js';

/**
 * The key's whole use, not only this job's: another job's 997 calls in the key's hour, or its
 * three tasks in the key's slots, are shown by the live display (in a pseudo-terminal at 80
 * and 110 columns), counted in its ETA and in `plan`, and said as what the work waits for.
 */

const OTHER = 'l_another-job-on-this-key';
let sim: RunningSim;
const jobs: TestJob[] = [];
afterAll(async () => {
  await sim?.close();
  for (const j of jobs) j.cleanup();
});

interface Scene {
  readonly key: string;
  readonly job: TestJob;
  readonly env: Record<string, string>;
}

/** A job of 3 photos (or `photos`) on a key of its own, whose store (its own state folder) `fill` writes first, as another job would have. */
async function scene(key: string, fill: (store: KeyStore, now: number) => void, photos = 3): Promise<Scene> {
  const job = await makeJob({ photos, steps: [{ capability: 'enhance' }] });
  jobs.push(job);
  const env = { DARKROOM_TEST_KEY: key, DARKROOM_STATE_DIR: path.join(job.dir, 'key-state') };
  const store = KeyStore.openFor(env.DARKROOM_STATE_DIR, fingerprintKey(key));
  try {
    store.immediate(() => fill(store, Date.now()));
  } finally {
    store.close();
  }
  return { key, job, env };
}

/** `n` of the hour's 1000 calls (997 by default), another job's, made from 30 minutes ago on, 0.6 s apart. */
const fullHour = (store: KeyStore, now: number, n = 997) => {
  for (let i = 0; i < n; i++) store.insertCall(OTHER, now - 30 * 60_000 + i * 600, 'poll');
};
/** Another job, alive (this test's process), with a task in each of the key's 3 slots for the next 10 minutes. */
const fullSlots = (store: KeyStore, now: number) => {
  store.registerOwner(OTHER, process.pid, hostname(), now);
  for (let i = 0; i < 3; i++)
    store.insertSlot(OTHER, { itemId: null, ref: `other-task-${i}`, kind: 'active', sinceMs: now, expiresMs: now + 10 * 60_000 });
};

/** The run, interrupted (Ctrl-C) while it waits, and the terminal's last screen. */
async function runOn(s: Scene, columns: number): Promise<{ code: number | null; screen: string[] }> {
  const r = await runInTerminal(['run', s.job.jobsFile, '--base-url', sim.apiUrl], s.env, columns, { interruptAfterMs: 6000 });
  return { code: r.code, screen: await screenOf(r.raw, columns) };
}

describe("the key's whole use", () => {
  const KEYS = ['keyuse-hour-80-key-1', 'keyuse-hour-110-key-2', 'keyuse-slots-80-key-3', 'keyuse-slots-110-key-4', 'keyuse-plan-key-5'];
  let hour: Scene[];
  let slots: Scene[];
  let runs: { code: number | null; screen: string[] }[];

  beforeAll(async () => {
    sim = await startSim({ keys: KEYS, seed: 4, latency: { medianMs: 300, sigma: 0.2 } });
    hour = [await scene(KEYS[0]!, fullHour), await scene(KEYS[1]!, fullHour)];
    slots = [await scene(KEYS[2]!, fullSlots), await scene(KEYS[3]!, fullSlots)];
    runs = await Promise.all([runOn(hour[0]!, 80), runOn(hour[1]!, 110), runOn(slots[0]!, 80), runOn(slots[1]!, 110)]);
  }, 120_000);

  it.each([
    [0, 80],
    [1, 110],
  ])('another job filled the hour: the display (%i, at %i columns) shows the whole hour, why it waits, and an ETA that counts it', (i) => {
    const { code, screen } = runs[i]!;
    expect(code).toBe(130);
    const text = screen.join('\n');
    expect(text).toMatch(/this minute · (99[7-9]|1000)\/1000 /);
    expect(text).toMatch(/^waiting +hour window: [0-3] calls of room, more from \d\d:\d\d:\d\d/m);
    // The other job's calls leave the hour 30 minutes after they were made: the ETA waits for them.
    const eta = screen.find((l) => /^eta /.test(l))!;
    expect(eta).toMatch(/ETA (2\d|3\d)m \d\ds \(hour window binds/);
    // Every row fits the terminal: nothing wrapped onto the next line.
    for (const l of screen) expect(l.length).toBeLessThanOrEqual(i === 0 ? 80 : 110);
  });

  it.each([
    [0, 80],
    [1, 110],
  ])("another job's tasks fill the slots: the display (%i, at %i columns) says so", (i) => {
    const { code, screen } = runs[2 + i]!;
    expect(code).toBe(130);
    const text = screen.join('\n');
    expect(text).toMatch(/tasks 0\/3 · calls/);
    expect(text).toMatch(/^waiting +3 task slot\(s\) held by another darkroom job/m);
    expect(text).toMatch(/0\/3 photos done/);
  });

  it("status and plan count another job's calls in the key's hour", async () => {
    const s = hour[0]!;
    const status = await runCli(['status', s.job.jobsFile], s.env);
    expect(status.stdout).toMatch(/calls in the last minute · (99[7-9]|1000)\/1000 in the last hour \(997 not this job's\)/);
    expect(status.stdout).toMatch(/^waiting  k_\w+: hour window: [0-3] calls of room, more from \d\d:\d\d:\d\d/m);
    // 990 of the hour's calls another job's, and 10 photos' 30 calls to make: the hour binds
    // until the other job's first calls leave it, half an hour from now.
    const p = await scene(KEYS[4]!, (store, now) => fullHour(store, now, 990), 10);
    const plan = await runCli(['plan', p.job.jobsFile, '--base-url', sim.apiUrl], p.env);
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stdout).toMatch(/hour bound .*; (99\d) calls already in the key's last hour count \(990 not this job's\)/);
    expect(plan.stdout).toMatch(/^time +at best (2\d|30)m \d\ds /m);
  });
});
