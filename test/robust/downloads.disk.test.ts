import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { describeError } from '../../src/cli/errors.js';
import { Ledger } from '../../src/ledger/index.js';
import { TEMP_SUFFIX } from '../../src/outputs/atomic.js';
import { DEFAULT_OUTPUT_RATIO, expectedOutputBytes } from '../../src/outputs/diskcheck.js';
import { nodeOutputFs, type OutputFs } from '../../src/outputs/outputfs.js';
import { makeJob, writePhoto } from '../helpers/job.js';
import { simulate } from '../helpers/simulate.js';
import { createsPerPhoto } from './helpers.js';
import { look as query } from '../helpers/ledger.js';

/**
 * Issue 12, point 2: the disk is checked before money is spent, and a disk that fails
 * during the run stops new creates while the paid results are kept. Disk faults are
 * injected through the output file-system seam (src/outputs/outputfs.ts): a small tmpfs
 * needs root, and a test must also pass as a normal user.
 */

const cleanups: (() => void)[] = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

function errno(code: string, syscall: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: injected, ${syscall}`), { code, syscall, errno: -28 });
}

/** The real file system, whose output writes fail with `code` from the (after+1)-th on, until `healed`. */
function failingAfter(after: number, code: string) {
  const state = { writes: 0, failures: 0, healed: false, onFirstFailure: () => {} };
  const fail = () => {
    if (state.healed || state.writes < after) return false;
    if (state.failures++ === 0) state.onFirstFailure();
    return true;
  };
  const fs: OutputFs = {
    ...nodeOutputFs,
    write: (fd, data) => {
      if (fail()) throw errno(code, 'write');
      nodeOutputFs.write(fd, data);
      state.writes++;
    },
    writeAsync: async (fd, data) => {
      if (fail()) throw errno(code, 'write');
      await nodeOutputFs.writeAsync(fd, data);
      state.writes++;
    },
  };
  return { fs, state };
}

describe('a disk that fills during the run', () => {
  it('stops new creates and uploads at the first ENOSPC, exits 1 with the line, keeps every photo; a rerun with space finishes them with one create each', async () => {
    const job = await makeJob({ photos: 20, steps: [{ capability: 'enhance' }] });
    const ledger = Ledger.open(job.ledgerFile);
    cleanups.push(job.cleanup, () => ledger.close());
    // The first write is the run's probe of the output folder, then three outputs fit.
    const disk = failingAfter(4, 'ENOSPC');
    let createsAtFirst: number | undefined;
    disk.state.onFirstFailure = () => {
      createsAtFirst = query<{ n: number }>(job.ledgerFile, 'SELECT COUNT(*) AS n FROM submissions')[0]!.n;
    };
    const r1 = await simulate({ job, ledger, runOptions: { outputFs: disk.fs } });

    // From the moment darkroom had the ENOSPC (its record of the failed write), no create and
    // no upload started; at most the creates already in flight when the disk failed ended,
    // fewer than the task slots.
    const order = (sql: string) => query<{ id: number | null }>(job.ledgerFile, sql)[0]!.id;
    const learnt = order("SELECT MIN(id) AS id FROM transitions WHERE from_state = 'downloading' AND note LIKE '%ENOSPC%'")!;
    expect(learnt).not.toBeNull();
    expect(order(`SELECT MAX(id) AS id FROM transitions WHERE to_state IN ('submitting', 'uploading')`)).toBeLessThan(learnt);
    const creates = query<{ n: number }>(job.ledgerFile, 'SELECT COUNT(*) AS n FROM submissions')[0]!.n;
    expect(creates - createsAtFirst!).toBeLessThanOrEqual(3);
    expect(creates).toBeLessThan(20);
    // A clear line, exit 1; nothing failed: the paid ones wait for space, the rest for their turn.
    expect(r1.result.exitCode).toBe(1);
    expect(r1.result.halt).toMatchObject({ kind: 'disk', exitCode: 1, immediate: false });
    expect(r1.result.halt!.message).toMatch(
      /^the output folder cannot take files: cannot write .+: no space left on the device \(ENOSPC\); no new photo is uploaded or created/,
    );
    expect(r1.result.halt!.message).toMatch(/run darkroom again/);
    expect(r1.result.halt!.message).not.toMatch(/\n/);
    const s = r1.result.status;
    expect(s).toMatchObject({ total: 20, done: 3, failed: 0, held: 0, pending: 17 });
    // Every task created was polled to its end and kept: paid, waiting for its download.
    expect(s.paidNotDownloaded).toBe(creates - 3);
    expect(s.states.active + s.states.submitting).toBe(0);
    expect(
      readdirSync(job.outputDir, { recursive: true })
        .map(String)
        .filter((f) => f.endsWith(TEMP_SUFFIX)),
    ).toEqual([]);

    // Space again: the rerun downloads what was paid and finishes the rest, one create per photo.
    const r2 = await simulate({ job, ledger, model: r1.model, clock: r1.clock });
    expect(r2.result.status).toMatchObject({ total: 20, done: 20, failed: 0, pending: 0 });
    expect(r2.result.exitCode).toBe(0);
    expect(Object.values(createsPerPhoto(job, job.sizes.keys(), r2.audit.createsPerSource))).toEqual(Array(20).fill(1));
  });

  it('read-only (EROFS) the same way: stops creates, exit 1, and the rerun finishes', async () => {
    const job = await makeJob({ photos: 6, steps: [{ capability: 'enhance' }] });
    cleanups.push(job.cleanup);
    const disk = failingAfter(2, 'EROFS');
    const r1 = await simulate({ job, runOptions: { outputFs: disk.fs } });
    expect(r1.result.exitCode).toBe(1);
    expect(r1.result.halt!.message).toMatch(/the file system is read-only \(EROFS\)/);
    expect(r1.result.status).toMatchObject({ total: 6, done: 1, failed: 0 });
    const r2 = await simulate({ job, ledger: r1.ledger, model: r1.model, clock: r1.clock });
    expect(r2.result.status).toMatchObject({ total: 6, done: 6 });
    expect(Object.values(r2.audit.createsPerSource)).toEqual(Array(6).fill(1));
  });
});

describe('before the first call', () => {
  it('a disk without room for the expected results stops the run: exit 2, not one call', async () => {
    const job = await makeJob({ photos: 5, steps: [{ capability: 'enhance' }] });
    cleanups.push(job.cleanup);
    const fs: OutputFs = { ...nodeOutputFs, freeBytes: () => 10 * 1024 * 1024 };
    const r = await simulate({ job, runOptions: { outputFs: fs } });
    expect(r.result.exitCode).toBe(2);
    expect(r.result.halt).toMatchObject({ kind: 'disk', exitCode: 2 });
    expect(r.result.halt!.message).toMatch(
      /^not enough free space in \S+: 10 MiB free, about \d+ MiB needed \(5 photo\(s\) still to come at 2× the input's size/,
    );
    expect(r.result.halt!.message).toMatch(/nothing was spent/);
    expect(Object.values(r.audit.keys).map((k) => k.calls)).toEqual([0]);
    expect(r.audit.tasks).toBe(0);
    expect(r.result.status).toMatchObject({ total: 5, pending: 5, failed: 0 });
  });

  it('an output folder where no file can be created stops the run: exit 2, not one call', async () => {
    const job = await makeJob({ photos: 3, steps: [{ capability: 'enhance' }] });
    cleanups.push(job.cleanup);
    const fs: OutputFs = {
      ...nodeOutputFs,
      create: () => {
        throw errno('EACCES', 'open');
      },
    };
    const r = await simulate({ job, runOptions: { outputFs: fs } });
    expect(r.result.exitCode).toBe(2);
    expect(r.result.halt!.message).toMatch(/^cannot write a file in the output folder \S+: permission denied \(EACCES\); set output\.dir/);
    expect(Object.values(r.audit.keys).map((k) => k.calls)).toEqual([0]);
  });

  it('estimates from the ratio of output to input bytes the ledger has seen, else from the stated default', () => {
    const cfg = {
      steps: [{ capability: 'enhance' as const }],
      output: {
        dir: '/o',
        layout: 'mirror' as const,
        pattern: '{name}.{ext}',
        keepIntermediates: false,
        metadata: 'none' as const,
        sidecar: { json: false, xmp: false },
      },
    };
    const facts = {
      photos: 10,
      inputBytes: 10_000_000,
      unknownSize: 0,
      extraNames: 0,
      observed: { photos: 0, outputBytes: 0, inputBytes: 0 },
    };
    expect(expectedOutputBytes(facts, cfg)).toMatchObject({ bytes: 10_000_000 * DEFAULT_OUTPUT_RATIO, ratio: DEFAULT_OUTPUT_RATIO });
    const seen = { ...facts, observed: { photos: 4, outputBytes: 12_000_000, inputBytes: 4_000_000 } };
    expect(expectedOutputBytes(seen, cfg)).toMatchObject({ bytes: 30_000_000, ratio: 3 });
    expect(expectedOutputBytes(seen, cfg).basis).toMatch(/3\.0× the input's size, as the 4 results so far/);
    // A duplicate name gets a copy; kept intermediates of a two-step job double the files.
    const two = {
      ...cfg,
      steps: [{ capability: 'restore' as const }, { capability: 'upscale' as const }],
      output: { ...cfg.output, keepIntermediates: true },
    };
    expect(expectedOutputBytes({ ...seen, extraNames: 5 }, two).bytes).toBe((30_000_000 + 5 * 3_000_000) * 2);
    expect(expectedOutputBytes({ ...facts, photos: 0, inputBytes: 0 }, cfg).bytes).toBe(0);
  });
});

describe('long names', () => {
  it('of 233 to 255 bytes are written: the temp name is short and fixed, whatever the output is called', async () => {
    const job = await makeJob({ photos: 0, steps: [{ capability: 'enhance' }] });
    cleanups.push(job.cleanup);
    const names = [
      `${'a'.repeat(229)}.jpg`, // 233 bytes: the first length the old temp suffix pushed past 255
      `${'b'.repeat(240)}.png`,
      `${'c'.repeat(251)}.jpg`, // 255 bytes, the limit
      `${'é'.repeat(125)}x.jpg`, // 255 bytes in UTF-8 (130 characters)
      `deep/${'d'.repeat(250)}.webp`,
    ];
    mkdirSync(path.join(job.inputDir, 'deep'), { recursive: true });
    for (const [i, n] of names.entries())
      await writePhoto(path.join(job.inputDir, n), i, n.endsWith('.png') ? 'png' : n.endsWith('.webp') ? 'webp' : 'jpeg');
    const temps: string[] = [];
    const fs: OutputFs = {
      ...nodeOutputFs,
      create: (file) => {
        temps.push(path.basename(file));
        return nodeOutputFs.create(file);
      },
    };
    const r = await simulate({ job, runOptions: { outputFs: fs } });
    expect(r.result.status).toMatchObject({ total: 5, done: 5, failed: 0, pending: 0 });
    for (const n of names) {
      expect(Buffer.byteLength(path.basename(n))).toBeGreaterThanOrEqual(233);
      expect(readFileSync(path.join(job.outputDir, n)).length, n).toBeGreaterThan(0);
    }
    // The probe and the five outputs: every temp name 25 bytes, ending as the sweep expects.
    expect(temps).toHaveLength(6);
    for (const t of temps) expect(t).toMatch(new RegExp(`^\\.dr-[0-9a-f]{8}${TEMP_SUFFIX.replace('.', '\\.')}$`));
  });
});

describe('a name at the limit', () => {
  it("leaves no room for a sidecar's `.json`: the output is written and done, the sidecar skipped with a warning", async () => {
    const job = await makeJob({ photos: 0, steps: [{ capability: 'enhance' }], extra: { output: { dir: './out', sidecar: true } } });
    cleanups.push(job.cleanup);
    const long = `${'s'.repeat(251)}.jpg`;
    await writePhoto(path.join(job.inputDir, long), 1);
    await writePhoto(path.join(job.inputDir, 'short.jpg'), 2);
    const r = await simulate({ job });
    expect(r.result.status).toMatchObject({ total: 2, done: 2, failed: 0, pending: 0 });
    expect(readdirSync(job.outputDir).sort()).toEqual([long, 'short.jpg', 'short.jpg.json'].sort());
  });
});

describe("the ledger's own disk filling", () => {
  it('SQLITE_FULL is one line with what to do, exit 1, not a stack trace', () => {
    const err = Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });
    const d = describeError(err);
    expect(d.exitCode).toBe(1);
    expect(d.line).toBe(
      'darkroom: the ledger could not be written: the disk holding it is full (SQLITE_FULL); free space there and run again, nothing is lost',
    );
  });

  it('an errno error from a file write that escapes is one line too', () => {
    const err = Object.assign(new Error("ENOSPC: no space left on device, open '/out/x.jpg'"), {
      code: 'ENOSPC',
      syscall: 'open',
      path: '/out/x.jpg',
    });
    expect(describeError(err)).toEqual({
      exitCode: 1,
      line: 'darkroom: cannot open /out/x.jpg: no space left on the device (ENOSPC); free space or fix permissions, then run again',
    });
  });
});
