import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeDirs } from '../../src/fsdirs.js';

/**
 * makeDirs is `mkdir -p` without Node's loop: Node's recursive mkdir never returns on procfs
 * (mkdir("/proc/x") ENOENT, mkdir("/proc") EEXIST, and again), in one synchronous call no
 * signal ends. Here every refusal comes back as the error the system gave.
 */
let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'darkroom-fsdirs-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const forms = [['makeDirs', async (d: string, mode?: number) => makeDirs(d, mode)]] as const;

describe.each(forms)('%s', (_name, make) => {
  it('leaves an existing folder as it is', async () => {
    mkdirSync(path.join(dir, 'here'), { mode: 0o750 });
    await make(path.join(dir, 'here'), 0o700);
    expect(statSync(path.join(dir, 'here')).mode & 0o777).toBe(0o750);
    await make(dir);
  });

  it('makes every missing folder down to the one asked for, with the mode given', async () => {
    const deep = path.join(dir, 'a', 'b', 'c');
    await make(deep, 0o700);
    for (const d of [path.join(dir, 'a'), path.join(dir, 'a', 'b'), deep]) {
      expect(statSync(d).isDirectory()).toBe(true);
      expect(statSync(d).mode & 0o077).toBe(0);
    }
  });

  it('a relative path is made from the current folder', async () => {
    const rel = path.relative(process.cwd(), path.join(dir, 'rel', 'x'));
    await make(rel);
    expect(statSync(path.join(dir, 'rel', 'x')).isDirectory()).toBe(true);
  });

  it('a file where the folder should be: EEXIST, the file untouched', async () => {
    writeFileSync(path.join(dir, 'afile'), 'x');
    await expect(make(path.join(dir, 'afile'))).rejects.toMatchObject({ code: 'EEXIST', path: path.join(dir, 'afile') });
    expect(statSync(path.join(dir, 'afile')).isFile()).toBe(true);
  });

  it('a file on the way: ENOTDIR, nothing made', async () => {
    writeFileSync(path.join(dir, 'afile'), 'x');
    await expect(make(path.join(dir, 'afile', 'x', 'y'))).rejects.toMatchObject({ code: 'ENOTDIR' });
    expect(statSync(path.join(dir, 'afile')).isFile()).toBe(true);
  });

  it('a folder under procfs: the ENOENT procfs gives, at once (Node loops there for ever)', async () => {
    await expect(make('/proc/darkroom-fsdirs-test/sub')).rejects.toMatchObject({
      code: 'ENOENT',
      syscall: 'mkdir',
      path: '/proc/darkroom-fsdirs-test',
    });
    await expect(make('/proc/darkroom-fsdirs-test')).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('/proc itself exists: nothing to do', async () => {
    await make('/proc');
  });
});
