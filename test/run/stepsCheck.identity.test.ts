import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { describeSteps, stepsSignature } from '../../src/config/steps.js';
import type { StepConfig } from '../../src/config/index.js';
import { LEGACY_SIG, Ledger, readStepsCensus } from '../../src/ledger/index.js';
import { itemStateLookup } from '../../src/ledger/read/progress.js';
import { migrate, readMigrations } from '../../src/ledger/sqliteFile.js';
import { makeJob, setSteps } from '../helpers/job.js';
import { simSession, simulate } from '../helpers/simulate.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

const sig = (steps: unknown[]) => stepsSignature(steps as StepConfig[]);

describe("a step list's signature", () => {
  it('changes with any field of any step and with their order, not with the order of keys or unset fields', () => {
    const base = [{ capability: 'restore' }, { capability: 'upscale', resolution: '4K', mode: 'general' }];
    expect(sig(base)).toMatch(/^[0-9a-f]{16}$/);
    expect(sig([{ capability: 'restore' }, { mode: 'general', resolution: '4K', capability: 'upscale' }])).toBe(sig(base));
    expect(sig([{ capability: 'restore', mode: undefined }, base[1]])).toBe(sig(base));
    for (const other of [
      [base[0]],
      [base[1], base[0]],
      [base[0], { ...base[1], resolution: '8K' }],
      [base[0], { ...base[1], mode: 'portrait' }],
      [base[0], { capability: 'upscale', resolution: '4K' }],
      [{ capability: 'image2image', style: 'sepia', prompt: 'a' }],
    ]) {
      expect(sig(other), JSON.stringify(other)).not.toBe(sig(base));
    }
    expect(sig([{ capability: 'image2image', style: 'sepia', prompt: 'a' }])).not.toBe(
      sig([{ capability: 'image2image', style: 'sepia', prompt: 'b' }]),
    );
    expect(describeSteps(base as StepConfig[])).toBe('restore → upscale (mode general, resolution 4K)');
  });
});

describe('a ledger from before step lists were recorded', () => {
  /** What migration 008 leaves of an older ledger: no signatures, meta `pipeline` naming the capabilities. */
  function forget(file: string): void {
    const db = new Database(file);
    db.exec(
      'UPDATE items SET steps_sig = NULL; UPDATE attempts SET steps_sig = NULL; UPDATE output_files SET steps_sig = NULL; DELETE FROM step_lists;',
    );
    db.close();
  }

  it("photos of the same capabilities adopt the job's list; of other capabilities, they are refused, named from meta pipeline", async () => {
    const job = await makeJob({ photos: 3, steps: [{ capability: 'restore' }, { capability: 'upscale' }] });
    const n = simSession({ job, seed: 4242, sim: { seed: 5 }, ledger: job.ledgerFile, runOptions: { graceMs: 0 } });
    cleanups.push(job.cleanup, () => n.ledger.close());
    expect((await simulate(n)).result.exitCode).toBe(0);
    n.ledger.close();
    forget(job.ledgerFile);

    setSteps(job, [{ capability: 'restore' }, { capability: 'enhance' }]);
    const m = { ...n, ledger: Ledger.open(job.ledgerFile) };
    cleanups.push(() => m.ledger.close());
    const refused = (await simulate(m)).result;
    expect(refused.exitCode).toBe(2);
    expect(refused.stepsChange!.others).toEqual([
      expect.objectContaining({ sig: LEGACY_SIG, done: 3, steps: [{ capability: 'restore' }, { capability: 'upscale' }] }),
    ]);

    // same capabilities (options unknown then): taken for the job's own list, nothing redone
    setSteps(job, [{ capability: 'restore' }, { capability: 'upscale', resolution: '4K' }]);
    const ok = (await simulate(m)).result;
    expect(ok.exitCode).toBe(0);
    expect(ok.stepsChange).toBeUndefined();
  });

  it('read-only (plan) on a ledger not yet migrated: every started photo of other capabilities is counted', () => {
    const db = new Database(':memory:');
    migrate(db, ':memory:', readMigrations().slice(0, 5));
    db.prepare("INSERT INTO meta (key, value) VALUES ('pipeline', ?)").run(JSON.stringify(['restore', 'upscale']));
    const ins = db.prepare('INSERT INTO items (rel_path, src_path, state, step_index, created_ms, updated_ms) VALUES (?, ?, ?, ?, 0, 0)');
    ins.run('a.jpg', '/a.jpg', 'done', 1);
    ins.run('b.jpg', '/b.jpg', 'active', 1);
    ins.run('c.jpg', '/c.jpg', 'queued', 0);
    ins.run('d.jpg', '/d.jpg', 'failed', 0);
    const current = sig([{ capability: 'restore' }]);
    const c = readStepsCensus(db, current, ['restore']);
    expect(c.others).toEqual([expect.objectContaining({ sig: LEGACY_SIG, done: 1, inProgress: 1, running: 1, failed: 1 })]);
    expect(c.adoptable).toBe(1);
    // What plan counts as redone from the first step, photo by photo.
    const lookup = itemStateLookup(db, current, ['restore']);
    const items = db.prepare('SELECT rel_path AS p, content_hash AS h FROM items').all() as { p: string; h: string }[];
    expect(
      items
        .filter((i) => lookup(i.h, i.p)?.redo)
        .map((i) => i.p)
        .sort(),
    ).toEqual(['a.jpg', 'b.jpg']);
    expect(readStepsCensus(db, sig([{ capability: 'restore' }, { capability: 'upscale' }]), ['restore', 'upscale']).others).toEqual([]);
  });
});
