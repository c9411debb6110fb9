import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { fingerprintKey } from '../../src/spec/key.js';
import { startSim, type RunningSim } from '../../src/sim/server.js';
import { runCli, type CliResult } from '../helpers/cli.js';
import { makeJob, type TestJob } from '../helpers/job.js';

// The spending guards through the real CLI against the HTTP simulator (issue 13, point 5):
// each stops starting work, finishes what was paid for, exits 4 with one line, and a rerun
// completes the rest with exactly one create per photo.

const KEY = 'guards-e2e-key-5c1d';
const ENV = { DARKROOM_TEST_KEY: KEY };
const ENHANCE = [{ capability: 'enhance' }];

let sim: RunningSim | undefined;
let job: TestJob | undefined;
afterEach(async () => {
  await sim?.close();
  job?.cleanup();
  sim = undefined;
  job = undefined;
});

const audit = () => sim!.model.audit();
const keyAudit = () => audit().keys[fingerprintKey(KEY)]!;

/** Output files written (temp files aside). */
function outputs(j: TestJob): string[] {
  if (!existsSync(j.outputDir)) return [];
  return readdirSync(j.outputDir, { recursive: true })
    .map(String)
    .filter((f) => /\.(jpg|jpeg|png|webp)$/.test(f));
}

/** When each create was sent, from the ledger (ms since the epoch). */
function createTimes(j: TestJob): number[] {
  const db = new Database(j.ledgerFile, { readonly: true });
  try {
    return (db.prepare('SELECT sent_ms FROM submissions ORDER BY id').all() as { sent_ms: number }[]).map((r) => r.sent_ms);
  } finally {
    db.close();
  }
}

type Event = { type: string; [k: string]: unknown };
const events = (r: CliResult): Event[] =>
  r.stdout
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as Event);

/** The first run stopped at a limit: exit 4, one line naming it; every create it made was finished and downloaded. */
function expectStoppedAt(r: CliResult, flag: string): void {
  expect(r.stderr).not.toMatch(/unexpected error/);
  expect(r.code).toBe(4);
  const lines = (r.stdout + r.stderr).split('\n').filter((l) => l.startsWith('stopped: at a limit you set'));
  expect(lines).toHaveLength(1);
  expect(lines[0]).toContain(`(${flag}`);
  expect(lines[0]).toMatch(/run again to continue$/);
  const k = keyAudit();
  expect(outputs(job!)).toHaveLength(k.creates);
  expect(k.activeNow).toBe(0);
}

/** A rerun without the limit completes every photo, each created exactly once over both runs. */
async function expectRerunCompletes(photos: number, env: Record<string, string> = ENV): Promise<void> {
  const again = await runCli(['run', job!.jobsFile, '--base-url', sim!.apiUrl], env);
  expect(again.stderr).not.toMatch(/unexpected error/);
  expect(again.code).toBe(0);
  expect(outputs(job!)).toHaveLength(photos);
  const perSource = Object.values(audit().createsPerSource);
  expect(perSource).toHaveLength(photos);
  expect(perSource.every((n) => n === 1)).toBe(true);
}

describe('darkroom run spending guards', () => {
  it('--max-photos N starts N new photos, finishes them, exits 4; a rerun does the rest', async () => {
    sim = await startSim({ keys: [KEY], seed: 11, latency: { medianMs: 300, sigma: 0.3 } });
    job = await makeJob({ photos: 8, steps: ENHANCE });
    const first = await runCli(['run', job.jobsFile, '--base-url', sim.apiUrl, '--max-photos', '3'], ENV);
    expectStoppedAt(first, '--max-photos 3');
    expect(keyAudit().uploads).toBe(3);
    expect(keyAudit().creates).toBe(3);
    expect(first.stdout).toMatch(/8 total · 3 done · 0 failed · 0 held · 5 pending/);
    await expectRerunCompletes(8);
  }, 90_000);

  it('--max-photos larger than the work left changes nothing: exit 0', async () => {
    sim = await startSim({ keys: [KEY], seed: 12, latency: { medianMs: 200, sigma: 0.3 } });
    job = await makeJob({ photos: 3, steps: ENHANCE });
    const r = await runCli(['run', job.jobsFile, '--base-url', sim.apiUrl, '--max-photos', '3'], ENV);
    expect(r.code).toBe(0);
    expect(r.stdout).not.toMatch(/limit you set/);
    expect(outputs(job)).toHaveLength(3);
  }, 60_000);

  it('--max-credits N: no create past N credits (enhance costs 1), reads GET /credits, exits 4; a rerun does the rest', async () => {
    sim = await startSim({ keys: [KEY], seed: 13, latency: { medianMs: 300, sigma: 0.3 } });
    job = await makeJob({ photos: 6, steps: ENHANCE });
    const first = await runCli(['run', job.jobsFile, '--base-url', sim.apiUrl, '--max-credits', '2', '--json'], ENV);
    expectStoppedAt(first, '--max-credits 2');
    expect(keyAudit().creates).toBe(2);
    const summary = events(first).at(-1)!;
    expect(summary).toMatchObject({ type: 'summary', exitCode: 4, done: 2, pending: 4, creditsSpent: 2 });
    expect(events(first).filter((e) => e.type === 'limit')).toEqual([expect.objectContaining({ guard: 'max-credits' })]);
    // The balance was read through the key's budget and recorded like any call.
    const status = await runCli(['status', job.jobsFile, '--json']);
    expect((JSON.parse(status.stdout) as { calls: { account: number } }).calls.account).toBeGreaterThanOrEqual(1);
    await expectRerunCompletes(6);
  }, 90_000);

  // restore 1 + upscale 2: a photo costs 3. A budget of 5 buys one whole photo; creates that
  // would start a second (a restore whose upscale the budget cannot pay) are never sent.
  const PIPELINE = [{ capability: 'restore' }, { capability: 'upscale', resolution: '4K' }];
  const PRICES = { credits: { restore: 1, upscale: 2 } };

  it('--max-credits on a pipeline buys whole photos: every create belongs to a photo finished, and the line says what the ledger shows', async () => {
    sim = await startSim({ keys: [KEY], seed: 21, latency: { medianMs: 300, sigma: 0.3 } });
    job = await makeJob({ photos: 4, steps: PIPELINE, extra: PRICES });
    const first = await runCli(['run', job.jobsFile, '--base-url', sim.apiUrl, '--max-credits', '5', '--json'], ENV);
    expect(first.code).toBe(4);
    const summary = events(first).at(-1)!;
    expect(summary).toMatchObject({ type: 'summary', exitCode: 4, done: 1, pending: 3 });
    expect(summary.creditsSpent).toBeLessThanOrEqual(5);
    // Two creates (restore, upscale) for the one photo done; none for a photo left half-way.
    expect(keyAudit().creates).toBe(2);
    expect(keyAudit().uploads).toBe(1);
    expect(outputs(job)).toHaveLength(1);
    const line = first.stderr.split('\n').filter((l) => l.startsWith('stopped:'));
    expect(line).toEqual([expect.stringContaining('--max-credits 5')]);
    expect(line[0]).toMatch(/3 credit\(s\) a photo/);
    expect(line[0]).toMatch(/every photo started was finished/);
  }, 90_000);

  it("--max-credits smaller than one photo's steps starts nothing, and says so", async () => {
    sim = await startSim({ keys: [KEY], seed: 22, latency: { medianMs: 300, sigma: 0.3 } });
    job = await makeJob({ photos: 3, steps: PIPELINE, extra: PRICES });
    const r = await runCli(['run', job.jobsFile, '--base-url', sim.apiUrl, '--max-credits', '2'], ENV);
    expect(r.code).toBe(4);
    expect(keyAudit().creates).toBe(0);
    expect(keyAudit().uploads).toBe(0);
    const line = r.stderr.split('\n').filter((l) => l.startsWith('stopped:'));
    expect(line).toHaveLength(1);
    expect(line[0]).toMatch(
      /--max-credits 2 is less than one photo's steps cost \(3 credit\(s\): restore 1 \+ upscale 2\); nothing was started/,
    );
    expect(r.stdout + r.stderr).not.toMatch(/paid for were finished/);
  }, 60_000);

  it('limits.maxCredits in the job file is the same guard', async () => {
    sim = await startSim({ keys: [KEY], seed: 14, latency: { medianMs: 300, sigma: 0.3 } });
    job = await makeJob({ photos: 5, steps: ENHANCE, extra: { limits: { maxCredits: 3 } } });
    const first = await runCli(['run', job.jobsFile, '--base-url', sim.apiUrl], ENV);
    expectStoppedAt(first, '--max-credits 3');
    expect(keyAudit().creates).toBe(3);
  }, 60_000);

  // 1.5 s tasks in 3 slots: by 2 s at most two rounds of creates (6 of 9 photos) can have started.
  it('--max-duration 2s: no create after it tripped, the tasks created are downloaded, exit 4; a rerun does the rest', async () => {
    sim = await startSim({ keys: [KEY], seed: 15, latency: { medianMs: 1500, sigma: 0.1 } });
    // Five photos: more than the three slots, so the guard, not the work, ends the first run.
    job = await makeJob({ photos: 5, steps: ENHANCE });
    const first = await runCli(['run', job.jobsFile, '--base-url', sim.apiUrl, '--max-duration', '2s', '--json'], ENV);
    expectStoppedAt(first, '--max-duration 2s');
    const limit = events(first).find((e) => e.type === 'limit')!;
    expect(limit).toMatchObject({ guard: 'max-duration' });
    const creates = createTimes(job);
    expect(creates.length).toBeGreaterThan(0);
    expect(creates.length).toBeLessThan(5);
    expect(Math.max(...creates)).toBeLessThanOrEqual(limit.atMs as number);
    await expectRerunCompletes(5);
  }, 120_000);

  it('--until HH:MM stops at that local time (the clock shifted to 5 s before it), exit 4; a rerun does the rest', async () => {
    // 1.5 s tasks in 3 slots: in the at most 5 s before the limit, at most 9 of the 12 photos start.
    sim = await startSim({ keys: [KEY], seed: 16, latency: { medianMs: 1500, sigma: 0.1 } });
    job = await makeJob({ photos: 12, steps: ENHANCE });
    const now = Date.now();
    const target = new Date(now + 120_000);
    target.setSeconds(0, 0);
    const hhmm = `${String(target.getHours()).padStart(2, '0')}:${String(target.getMinutes()).padStart(2, '0')}`;
    const skew = target.getTime() - 5000 - now;
    // A key budget folder of its own: the shifted times it records must not meet the other tests' runs.
    const shifted = { ...ENV, DARKROOM_TEST_CLOCK_SKEW_MS: String(skew), DARKROOM_STATE_DIR: path.join(job.dir, 'key-state') };
    const first = await runCli(['run', job.jobsFile, '--base-url', sim.apiUrl, '--until', hhmm, '--json'], shifted);
    expectStoppedAt(first, `--until ${hhmm}`);
    const limit = events(first).find((e) => e.type === 'limit')!;
    expect(limit.atMs as number).toBeGreaterThanOrEqual(target.getTime());
    expect(Math.max(...createTimes(job))).toBeLessThanOrEqual(limit.atMs as number);
    expect(keyAudit().creates).toBeLessThan(12);
    // On the same shifted clock: the key's budget file holds the first run's calls at its times.
    await expectRerunCompletes(12, shifted);
  }, 120_000);

  it.each([
    [['--max-photos', '0'], /--max-photos: expected a whole number above zero, got 0/],
    [['--max-credits', '2.5'], /--max-credits: expected a whole number above zero, got 2.5/],
    [['--max-duration', '6 hours'], /--max-duration: expected a duration like 90m, 6h, 1h30m or 45s, got "6 hours"/],
    [['--until', '7am'], /--until: expected a local time HH:MM \(24-hour\)/],
  ])(
    '%j is a usage error: exit 2, one line, no call',
    async (args, message) => {
      sim = await startSim({ keys: [KEY], seed: 17 });
      job = await makeJob({ photos: 1, steps: ENHANCE });
      const r = await runCli(['run', job.jobsFile, '--base-url', sim.apiUrl, ...args], ENV);
      expect(r.code).toBe(2);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stderr).toMatch(message);
      expect(audit().keys[fingerprintKey(KEY)]?.calls ?? 0).toBe(0);
    },
    30_000,
  );
});

describe('darkroom run --json', () => {
  it('writes one JSON event a line: one per photo done or skipped, naming its input and outputs, then the summary', async () => {
    sim = await startSim({ keys: [KEY], seed: 18, latency: { medianMs: 200, sigma: 0.3 } });
    job = await makeJob({ photos: 5, steps: ENHANCE });
    // Not an image whatever its name: skipped at discovery, before any call.
    const { writeFileSync } = await import('node:fs');
    writeFileSync(path.join(job.inputDir, 'broken.jpg'), 'not a jpeg at all');
    const r = await runCli(['run', job.jobsFile, '--base-url', sim.apiUrl, '--json'], ENV);
    expect(r.code).toBe(0);
    const all = events(r);
    for (const line of r.stdout.trim().split('\n')) expect(() => JSON.parse(line) as unknown).not.toThrow();
    const done = all.filter((e) => e.type === 'done');
    expect(done.map((e) => e.input).sort()).toEqual([...job.sizes.keys()].sort());
    for (const e of done) {
      expect(e.outputs).toHaveLength(1);
      const out = (e.outputs as string[])[0]!;
      expect(path.isAbsolute(out)).toBe(false);
      expect(existsSync(path.join(job.outputDir, out))).toBe(true);
      expect(out.replace(/\.[a-z]+$/, '')).toBe((e.input as string).replace(/\.[a-z]+$/, ''));
      expect(e.reason).toBeNull();
    }
    // One photo-level event per photo: no second event repeats a done photo's facts.
    expect(all.filter((e) => e.input === done[0]!.input).map((e) => e.type)).toEqual(['done']);
    expect(new Set(all.map((e) => e.type))).toEqual(new Set(['done', 'skipped', 'summary']));
    const skipped = all.filter((e) => e.type === 'skipped');
    expect(skipped).toHaveLength(1);
    expect(skipped[0]).toMatchObject({ input: 'broken.jpg', outputs: [] });
    expect(skipped[0]!.reason).toEqual(expect.any(String));
    expect(all.at(-1)).toMatchObject({
      type: 'summary',
      total: 5,
      done: 5,
      failed: 0,
      skipped: 1,
      held: 0,
      pending: 0,
      exitCode: 0,
      stopped: null,
    });
    expect(all.filter((e) => e.type === 'summary')).toHaveLength(1);
    // The human report went to stderr, not into the events.
    expect(r.stderr).toMatch(/5 total · 5 done · 0 failed · 0 held · 0 pending · 1 skipped/);

    // A rerun with nothing to do: no photo events, only the summary.
    const again = await runCli(['run', job.jobsFile, '--base-url', sim.apiUrl, '--json'], ENV);
    expect(events(again).map((e) => e.type)).toEqual(['summary']);
  }, 60_000);
});
