import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import { watchFolder, type FolderWatch } from '../../src/inputs/follow/watch.js';
import { followHow } from '../../src/run/follow.js';
import { makeJob, makeTempDir } from '../helpers/job.js';

/* The followed folder's watcher as it runs on this machine: native events (@parcel/watcher), or chokidar scanning. */

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function until(ok: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 25));
  }
}

function watched(dir: string, poll: boolean) {
  const files: string[] = [];
  const folders: string[] = [];
  const w: FolderWatch = watchFolder(
    dir,
    { poll, pollMs: 200, skipFolder: (r) => r === 'out' },
    { file: (r) => files.push(r), folder: (r) => folders.push(r), error: (e) => folders.push(`error ${e.message}`) },
  );
  cleanups.push(() => w.close());
  return { w, files, folders };
}

describe('the followed folder’s watcher', () => {
  it('on a local disk, names each file written, renamed or deleted, in sub-folders too; never the skipped folder’s', async () => {
    const dir = makeTempDir();
    mkdirSync(path.join(dir, 'box 1'));
    mkdirSync(path.join(dir, 'out'));
    const { w, files, folders } = watched(dir, false);
    await w.ready;
    writeFileSync(path.join(dir, 'box 1', 'scan.tif'), 'x');
    writeFileSync(path.join(dir, 'out', 'result.jpg'), 'x');
    await until(() => files.includes('box 1/scan.tif'));
    // A folder moved in: its files, and its folders', were there before any watch on them.
    const outside = makeTempDir();
    mkdirSync(path.join(outside, 'card', 'roll 1'), { recursive: true });
    writeFileSync(path.join(outside, 'card', 'roll 1', 'frame.jpg'), 'x');
    renameSync(path.join(outside, 'card'), path.join(dir, 'card'));
    await until(() => folders.includes('card') && folders.includes('card/roll 1'));
    // A file deleted: named too (the settler finds it gone).
    rmSync(path.join(dir, 'box 1', 'scan.tif'));
    await until(() => files.filter((f) => f === 'box 1/scan.tif').length >= 2);
    await new Promise((r) => setTimeout(r, 200));
    expect(files.some((f) => f.startsWith('out/'))).toBe(false);
  });

  it('on a mount watched by scanning, names each folder that changed within its interval', async () => {
    const dir = makeTempDir();
    mkdirSync(path.join(dir, 'box 2'));
    const { w, folders } = watched(dir, true);
    await w.ready;
    const t = Date.now();
    writeFileSync(path.join(dir, 'box 2', 'scan.jpg'), 'x');
    await until(() => folders.includes('box 2'));
    expect(Date.now() - t).toBeLessThan(2_000);
  });

  it('on a mount watched by scanning, names a folder changed before its first scan had looked at it', async () => {
    const dir = makeTempDir();
    mkdirSync(path.join(dir, 'box 3'));
    const { w, folders } = watched(dir, true);
    // Written at once: each folder's poll takes its first look later, so sees this file as always there.
    writeFileSync(path.join(dir, 'box 3', 'scan.jpg'), 'x');
    await w.ready;
    await until(() => folders.includes('box 3'), 2_000);
  });

  it('chooses scanning on a network file system, events elsewhere, or what input.watch says', async () => {
    const job = await makeJob({ photos: 0 });
    cleanups.push(job.cleanup);
    const config = loadConfig(job.jobsFile, { env: {} });
    const before = process.env.DARKROOM_TEST_FS_TYPE;
    try {
      process.env.DARKROOM_TEST_FS_TYPE = 'nfs';
      expect(followHow({ config })).toEqual({ how: 'poll', fs: 'nfs' });
      process.env.DARKROOM_TEST_FS_TYPE = 'ext4';
      expect(followHow({ config })).toEqual({ how: 'events', fs: 'ext4' });
      expect(followHow({ config: { ...config, input: { ...config.input, watch: 'poll' } } }).how).toBe('poll');
    } finally {
      if (before === undefined) delete process.env.DARKROOM_TEST_FS_TYPE;
      else process.env.DARKROOM_TEST_FS_TYPE = before;
    }
  });
});
