import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig, resolveLedgerPath } from '../../src/config/index.js';
import { makeTempDir } from '../helpers/job.js';

/**
 * A ledger path with `..` means what the kernel makes of it (issue 12, point 5): after a
 * symbolic link, `..` goes up from the link's target. Spelled out lexically it named another
 * file, and a second run opened a new ledger beside the one in use.
 */

const dirs: string[] = [];
afterEach(() => {
  while (dirs.length) rmSync(dirs.pop()!, { recursive: true, force: true });
});

function tree(): { root: string; state: string; link: string } {
  const root = makeTempDir('darkroom-ledgerpath-');
  dirs.push(root);
  const state = path.join(root, 'state');
  mkdirSync(path.join(state, 'inner'), { recursive: true });
  const link = path.join(root, 'elsewhere');
  symlinkSync(path.join(state, 'inner'), link);
  return { root, state, link };
}

describe('resolveLedgerPath', () => {
  it("goes up from a symbolic link's target, as the kernel does", () => {
    const { root, state } = tree();
    expect(resolveLedgerPath(root, 'elsewhere/../darkroom.db')).toBe(path.join(state, 'darkroom.db'));
    expect(resolveLedgerPath('/unused', `${root}/elsewhere/../darkroom.db`)).toBe(path.join(state, 'darkroom.db'));
  });

  it('leaves paths without `..` as path.resolve makes them (a link in the folder is kept)', () => {
    const { root, link } = tree();
    expect(resolveLedgerPath(root, 'elsewhere/./darkroom.db')).toBe(path.join(link, 'darkroom.db'));
    expect(resolveLedgerPath(root, 'state//darkroom.db')).toBe(path.join(root, 'state', 'darkroom.db'));
  });

  it('resolves the part that exists and appends the rest (a first run makes the folders)', () => {
    const { root, state } = tree();
    expect(resolveLedgerPath(root, 'elsewhere/../new/deeper/darkroom.db')).toBe(path.join(state, 'new', 'deeper', 'darkroom.db'));
    expect(resolveLedgerPath(root, 'new/x/../darkroom.db')).toBe(path.join(root, 'new', 'darkroom.db'));
  });

  it("is what --ledger and the jobs file's `ledger:` give", () => {
    const { root, state } = tree();
    const jobs = path.join(root, 'jobs.yaml');
    writeFileSync(
      jobs,
      'service: { apiKeyEnv: K }\ninput: { dir: . }\noutput: { dir: out }\nsteps: [{ capability: enhance }]\nledger: elsewhere/../darkroom.db\n',
    );
    expect(loadConfig(jobs, { env: {} }).ledger).toBe(path.join(state, 'darkroom.db'));
    expect(loadConfig(jobs, { env: {}, ledger: `${root}/elsewhere/../other.db` }).ledger).toBe(path.join(state, 'other.db'));
  });
});
