import { copyFileSync, mkdirSync, renameSync, rmSync, statSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { Ledger } from '../../src/ledger/index.js';
import { rescueDeleted } from '../../src/ledger/fileCheck.js';
import { makeTempDir } from '../helpers/job.js';
import { LedgerMovedError } from '../../src/errors.js';

/**
 * Ledger.checkFile (issue 12, point 5): the path still names the file opened, or a
 * LedgerMovedError says what became of it — moved (and where), replaced, deleted.
 */

const dirs: string[] = [];
const open: Ledger[] = [];
afterEach(() => {
  while (open.length) open.pop()!.close();
  while (dirs.length) rmSync(dirs.pop()!, { recursive: true, force: true });
});

function fresh(): { dir: string; file: string; ledger: Ledger } {
  const dir = makeTempDir('darkroom-filecheck-');
  dirs.push(dir);
  const file = path.join(dir, 'darkroom.db');
  const ledger = Ledger.open(file);
  open.push(ledger);
  return { dir, file, ledger };
}

function changeOf(ledger: Ledger): unknown {
  try {
    ledger.checkFile();
    return null;
  } catch (err) {
    expect(err).toBeInstanceOf(LedgerMovedError);
    return { change: (err as LedgerMovedError).change, message: (err as Error).message };
  }
}

describe('Ledger.checkFile', () => {
  it('passes while the path names the file opened, also after writes', () => {
    const { ledger } = fresh();
    ledger.setMeta('k', 'v');
    expect(changeOf(ledger)).toBeNull();
  });

  it('moved: says where the open file is now, and how to carry on', () => {
    const { dir, file, ledger } = fresh();
    mkdirSync(path.join(dir, 'archive'));
    const to = path.join(dir, 'archive', 'night.db');
    renameSync(file, to);
    expect(changeOf(ledger)).toEqual({
      change: { kind: 'moved', to },
      message: `the ledger ${file} was moved to ${to} during the run; nothing more was sent. Move it back, or run again with --ledger ${to}`,
    });
    renameSync(to, file);
    expect(changeOf(ledger)).toBeNull();
  });

  it('deleted: says so', () => {
    const { file, ledger } = fresh();
    unlinkSync(file);
    expect(changeOf(ledger)).toEqual({
      change: { kind: 'deleted' },
      message: `the ledger ${file} was deleted during the run; nothing more was sent`,
    });
  });

  it('replaced by another file (a copy put in its place): says where the one in use went', () => {
    const { dir, file, ledger } = fresh();
    const aside = path.join(dir, 'aside.db');
    renameSync(file, aside);
    copyFileSync(aside, file);
    expect(changeOf(ledger)).toMatchObject({
      change: { kind: 'replaced', original: { kind: 'moved', to: aside } },
      message: `the ledger ${file} was replaced by another file during the run; nothing more was sent; the one this run used is now ${aside}: move it back, or run again with --ledger ${aside}`,
    });
  });

  it('replaced, the one in use deleted (another file renamed over it)', () => {
    const { dir, file, ledger } = fresh();
    writeFileSync(path.join(dir, 'other.db'), 'x');
    renameSync(path.join(dir, 'other.db'), file);
    expect(changeOf(ledger)).toMatchObject({ change: { kind: 'replaced', original: { kind: 'deleted' } } });
  });

  it('a symbolic link pointed at another file is a replaced ledger', () => {
    const { dir, file } = fresh();
    const link = path.join(dir, 'current.db');
    symlinkSync(file, link);
    const viaLink = Ledger.open(link);
    open.push(viaLink);
    expect(changeOf(viaLink)).toBeNull();
    const other = Ledger.open(path.join(dir, 'other.db'));
    open.push(other);
    unlinkSync(link);
    symlinkSync(path.join(dir, 'other.db'), link);
    expect(changeOf(viaLink)).toMatchObject({ change: { kind: 'replaced', original: { kind: 'moved', to: file } } });
  });

  it('has nothing to check for an in-memory ledger', () => {
    const ledger = Ledger.open(':memory:');
    open.push(ledger);
    expect(changeOf(ledger)).toBeNull();
  });
});

describe('Ledger.rescueIfDeleted', () => {
  it('a deleted ledger is saved whole beside its path, under a name of its own, owner-only', () => {
    const { file, ledger } = fresh();
    ledger.setMeta('night', 'of the 22nd');
    unlinkSync(file);
    expect(ledger.rescueIfDeleted()).toEqual({ savedTo: `${file}.rescued`, pathFree: true });
    expect(statSync(`${file}.rescued`).mode & 0o777).toBe(0o600);
    const copy = Ledger.open(`${file}.rescued`);
    open.push(copy);
    expect(copy.getMeta('night')).toBe('of the 22nd');
    expect(copy.integrityCheck()).toBe('ok');
    // A second time (a .rescued already there): another name, nothing overwritten.
    expect(ledger.rescueIfDeleted()).toEqual({ savedTo: `${file}.rescued-2`, pathFree: true });
  });

  it('also when another file took its name', () => {
    const { dir, file, ledger } = fresh();
    writeFileSync(path.join(dir, 'other.db'), 'x');
    renameSync(path.join(dir, 'other.db'), file);
    expect(ledger.rescueIfDeleted()).toEqual({ savedTo: `${file}.rescued`, pathFree: false });
  });

  it('nothing to save while the file exists, here or moved elsewhere', () => {
    const { dir, file, ledger } = fresh();
    expect(ledger.rescueIfDeleted()).toBeNull();
    renameSync(file, path.join(dir, 'moved.db'));
    expect(ledger.rescueIfDeleted()).toBeNull();
  });

  it('says why when it cannot save (its folder cannot be made: /sys/kernel, unwritable for root too)', () => {
    const db = new Database(':memory:');
    try {
      expect(rescueDeleted(db, '/sys/kernel/darkroom-test/darkroom.db', { kind: 'deleted' })).toEqual({
        error: expect.stringMatching(/EPERM|EACCES/),
      });
    } finally {
      db.close();
    }
  });
});
