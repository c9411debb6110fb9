import { existsSync, readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { fingerprintKey } from '../../src/spec/key.js';
import { startSim } from '../../src/sim/server.js';
import { runCli } from '../helpers/cli.js';
import { makeJob } from '../helpers/job.js';
import { callsSeen } from '../helpers/ledger.js';

/**
 * The ledger on a NAS: `ledger: ./out/darkroom.db` with the archive on network storage puts
 * the one file whose loss costs money where SQLite's WAL is not safe. darkroom looks at its
 * file system first (statfs; DARKROOM_TEST_FS_TYPE stands in for the NAS here) and stops
 * before any call, exit 2, unless the job says `ledger: { path: …, allowNetworkFs: true }`:
 * then it runs with the rollback journal, and says so.
 */

const KEY = 'network-fs-test-key-71c3';
const FP = fingerprintKey(KEY);
const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** A job of 2 photos against a fresh simulator, its ledger as `ledger` (YAML); run once with `fsType` standing for the file system. */
async function runOn(fsType: string | null, ledger: unknown = './state/darkroom.db') {
  const sim = await startSim({ keys: [KEY], seed: 9, latency: { medianMs: 300, sigma: 0.1 } });
  cleanups.push(() => sim.close());
  const job = await makeJob({ photos: 2, steps: [{ capability: 'enhance' }], extra: { ledger } });
  cleanups.push(job.cleanup);
  const env: Record<string, string> = { DARKROOM_TEST_KEY: KEY, ...(fsType ? { DARKROOM_TEST_FS_TYPE: fsType } : {}) };
  const r = await runCli(['run', job.jobsFile, '--base-url', sim.apiUrl, '--quiet'], env);
  return { r, sim, job, env };
}

const journalOf = (file: string) =>
  readFileSync(file)
    .subarray(18, 20)
    .equals(Buffer.from([2, 2]))
    ? 'wal'
    : 'rollback';

describe('the ledger on a network file system', () => {
  it.each([
    ['NFS', 'nfs', 'nfs'],
    ['SMB', 'smb2', 'smb2'],
  ])('%s: one line before any call, exit 2, nothing written', async (_name, fsType, shown) => {
    const { r, sim, job } = await runOn(fsType);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(
      `darkroom: the ledger is on a network file system (${shown}): SQLite needs a local disk for it; set ledger: to a local path — inputs and outputs may stay on the NAS\n`,
    );
    expect(callsSeen(sim, FP)).toBe(0);
    expect(existsSync(job.ledgerFile)).toBe(false);
  });

  it('allowed by `ledger: { path, allowNetworkFs: true }`: the run goes on with the rollback journal, and says so once', async () => {
    const { r, job, env } = await runOn('nfs', { path: './state/darkroom.db', allowNetworkFs: true });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/2 total · 2 done/);
    const warned = r.stderr.split('\n').filter((l) => l.includes('network file system'));
    expect(warned[0]).toMatch(
      /^darkroom: warning: the ledger is on a network file system \(nfs\), as ledger\.allowNetworkFs allows: it uses SQLite's rollback journal instead of WAL/,
    );
    expect(journalOf(job.ledgerFile)).toBe('rollback');
    expect(existsSync(`${job.ledgerFile}-wal`)).toBe(false);
    // status reads it as any ledger.
    const status = await runCli(['status', job.jobsFile, '--json'], env);
    expect(JSON.parse(status.stdout)).toMatchObject({ total: 2, done: 2 });
  });

  it('a local disk: `ledger: ./path` as ever, WAL, no word of it', async () => {
    const { r, job } = await runOn(null);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).not.toMatch(/network file system/);
    expect(journalOf(job.ledgerFile)).toBe('wal');
  });
});
