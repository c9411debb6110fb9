import { copyFileSync, existsSync, mkdirSync, renameSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { fingerprintKey } from '../../src/spec/key.js';
import { startSim, type RunningSim } from '../../src/sim/server.js';
import { runCli } from '../helpers/cli.js';
import { makeJob, type TestJob } from '../helpers/job.js';
import { callsSeen, count, waitForLedger } from '../helpers/ledger.js';
import type { Ledger } from '../../src/ledger/index.js';

/**
 * Issue 12, point 5: a ledger moved or replaced during a run went unnoticed: the run wrote
 * on into a file nobody would open again, and the next run, finding no ledger at the path,
 * created every photo again. Now the path is checked before every call and download, and
 * the run stops at once with exit 2 and a line saying where the ledger went.
 */

const KEY = 'moved-test-key-91c0de';
const FP = fingerprintKey(KEY);
const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** Tasks of a few seconds: the run polls for a while, with calls between which to move the ledger. */
async function sim(): Promise<RunningSim> {
  const s = await startSim({ keys: [KEY], seed: 41, latency: { medianMs: 2000, sigma: 0.2 } });
  cleanups.push(() => s.close());
  return s;
}

async function job(): Promise<TestJob> {
  const j = await makeJob({ photos: 6, steps: [{ capability: 'enhance' }] });
  cleanups.push(j.cleanup);
  return j;
}

const active = (l: Ledger) => l.status().states.active >= 2;

function integrity(file: string): string {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    return db.pragma('integrity_check', { simple: true }) as string;
  } finally {
    db.close();
  }
}

/**
 * Calls in flight when the ledger moved may still arrive and be answered (at most 4 per
 * lane: LaneOptions.maxInflight); none may be sent after.
 */
const IN_FLIGHT_AT_MOST = 4;

describe('a ledger moved or replaced during a run', () => {
  it('moved away: exit 2, one line naming where it went, nothing sent after; moved back, the next run finishes with one create a photo', async () => {
    const s = await sim();
    const j = await job();
    const run = runCli(['run', j.jobsFile, '--base-url', s.apiUrl, '--quiet'], { DARKROOM_TEST_KEY: KEY });
    await waitForLedger(j.ledgerFile, active);
    const movedTo = path.join(j.dir, 'elsewhere', 'darkroom.db');
    mkdirSync(path.dirname(movedTo));
    renameSync(j.ledgerFile, movedTo);
    const atMove = callsSeen(s, FP);
    const r = await run;

    expect(r.code).toBe(2);
    const stopped = r.stderr.split('\n').filter((l) => l.startsWith('stopped:'));
    expect(stopped).toEqual([
      `stopped: the ledger ${j.ledgerFile} was moved to ${movedTo} during the run; nothing more was sent. Move it back, or run again with --ledger ${movedTo}`,
    ]);
    expect(callsSeen(s, FP) - atMove).toBeLessThanOrEqual(IN_FLIGHT_AT_MOST);
    // Nothing was left at the old path (no new ledger), the moved one is whole, and no photo
    // was marked failed for it.
    expect(existsSync(j.ledgerFile)).toBe(false);
    expect(integrity(movedTo)).toBe('ok');
    const db = new Database(movedTo, { readonly: true });
    expect(count(db, "SELECT COUNT(*) AS n FROM items WHERE state IN ('failed', 'held')")).toBe(0);
    db.close();

    renameSync(movedTo, j.ledgerFile);
    const again = await runCli(['run', j.jobsFile, '--base-url', s.apiUrl, '--quiet'], { DARKROOM_TEST_KEY: KEY });
    expect(again.code).toBe(0);
    const creates = Object.values(s.model.audit().createsPerSource);
    expect(creates).toHaveLength(6);
    expect(creates.every((n) => n === 1)).toBe(true);
  });

  it('deleted: exit 2; what the run held is saved beside it; put back, the next run creates nothing twice', async () => {
    const s = await sim();
    const j = await job();
    const run = runCli(['run', j.jobsFile, '--base-url', s.apiUrl, '--quiet'], { DARKROOM_TEST_KEY: KEY });
    await waitForLedger(j.ledgerFile, active);
    unlinkSync(j.ledgerFile);
    const atDelete = callsSeen(s, FP);
    const r = await run;

    expect(r.code).toBe(2);
    const rescued = `${j.ledgerFile}.rescued`;
    const said = r.stderr.split('\n').filter((l) => /^(stopped|saved):/.test(l));
    expect(said).toEqual([
      `stopped: the ledger ${j.ledgerFile} was deleted during the run; nothing more was sent`,
      `saved: what this run held of the ledger is in ${rescued} (every task paid for, every create in doubt): put it back with \`mv ${rescued} ${j.ledgerFile}\` and run again`,
    ]);
    expect(callsSeen(s, FP) - atDelete).toBeLessThanOrEqual(IN_FLIGHT_AT_MOST);
    expect(integrity(rescued)).toBe('ok');
    // The deleted file's journal is not left beside the path, to be replayed into the copy put back.
    expect(existsSync(`${j.ledgerFile}-wal`)).toBe(false);
    expect(existsSync(`${j.ledgerFile}-shm`)).toBe(false);

    renameSync(rescued, j.ledgerFile);
    const again = await runCli(['run', j.jobsFile, '--base-url', s.apiUrl, '--quiet'], { DARKROOM_TEST_KEY: KEY });
    expect(again.code).toBe(0);
    const creates = Object.values(s.model.audit().createsPerSource);
    expect(creates).toHaveLength(6);
    expect(creates.every((n) => n === 1)).toBe(true);
  });

  it('replaced by another file: exit 2, the line says where the one in use went', async () => {
    const s = await sim();
    const j = await job();
    const run = runCli(['run', j.jobsFile, '--base-url', s.apiUrl, '--quiet'], { DARKROOM_TEST_KEY: KEY });
    await waitForLedger(j.ledgerFile, active);
    // Moved aside and a copy put in its place (a copy of the main file alone: an older state).
    const aside = path.join(j.dir, 'state', 'darkroom.saved.db');
    renameSync(j.ledgerFile, aside);
    copyFileSync(aside, j.ledgerFile);
    const atReplace = callsSeen(s, FP);
    const r = await run;

    expect(r.code).toBe(2);
    const stopped = r.stderr.split('\n').filter((l) => l.startsWith('stopped:'));
    expect(stopped).toEqual([
      `stopped: the ledger ${j.ledgerFile} was replaced by another file during the run; nothing more was sent; the one this run used is now ${aside}: move it back, or run again with --ledger ${aside}`,
    ]);
    expect(callsSeen(s, FP) - atReplace).toBeLessThanOrEqual(IN_FLIGHT_AT_MOST);
    expect(integrity(aside)).toBe('ok');
  });
});
