import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DarkroomError } from '../../src/errors.js';
import { KeyStore } from '../../src/keystore/store.js';
import { openDatabase } from '../../src/ledger/open.js';

/**
 * What is at a ledger's (or key store's) path before it is opened for writing: a folder, a
 * file on the way, procfs, a file that is not SQLite. Each is refused in one line with its
 * code, touching nothing; an empty file or a real ledger opens.
 */
let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'darkroom-sqlitefile-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function refusal(fn: () => unknown): DarkroomError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(DarkroomError);
    expect((err as Error).message).not.toContain('\n');
    return err as DarkroomError;
  }
  throw new Error('not refused');
}

describe('opening a ledger for writing', () => {
  it('a path through a file: LEDGER_UNWRITABLE, a file is where its folder should be', () => {
    writeFileSync(path.join(dir, 'afile'), 'x');
    const e = refusal(() => openDatabase(path.join(dir, 'afile', 'x.db')));
    expect(e.code).toBe('LEDGER_UNWRITABLE');
    expect(e.message).toContain(`a file is where its folder should be (EEXIST at ${path.join(dir, 'afile')})`);
    expect(readFileSync(path.join(dir, 'afile'), 'utf8')).toBe('x');
  });

  it('a folder: LEDGER_UNWRITABLE saying it is a folder, not hard links', () => {
    mkdirSync(path.join(dir, 'sub', 'inner'), { recursive: true });
    const e = refusal(() => openDatabase(path.join(dir, 'sub')));
    expect(e.code).toBe('LEDGER_UNWRITABLE');
    expect(e.message).toContain(`it is a folder, not a file (name a file in it, such as ${path.join(dir, 'sub', 'darkroom.db')})`);
    expect(e.message).not.toMatch(/hard link/);
  });

  it('a folder under procfs: LEDGER_UNWRITABLE at once', () => {
    const e = refusal(() => openDatabase('/proc/darkroom-test/x/darkroom.db'));
    expect(e.code).toBe('LEDGER_UNWRITABLE');
    expect(e.message).toContain('(ENOENT at /proc/darkroom-test)');
  });

  it.each([
    ['one byte', 'x'],
    ['a text under the size SQLite checks', 'important customer notes\n'.repeat(4)],
    ['a JPEG', Buffer.from([0xff, 0xd8, 0xff, 0xdb, 0, 0x43, 0])],
  ])('a file that is not SQLite (%s): LEDGER_DAMAGED, left as it was', (_what, content) => {
    const file = path.join(dir, 'notes.txt');
    writeFileSync(file, content);
    const before = readFileSync(file);
    const e = refusal(() => openDatabase(file));
    expect(e.code).toBe('LEDGER_DAMAGED');
    expect(e.message).toBe(
      `${file} is not a darkroom ledger: the file exists and is not a SQLite database, so it was left untouched; ` +
        'point --ledger (or ledger: in the jobs file) at a new file or an existing ledger',
    );
    expect(readFileSync(file).equals(before)).toBe(true);
    expect(existsSync(`${file}-wal`) || existsSync(`${file}-shm`)).toBe(false);
  });

  it('an empty file, and a ledger already made, open', () => {
    const file = path.join(dir, 'empty.db');
    writeFileSync(file, '');
    openDatabase(file).close();
    expect(readFileSync(file).subarray(0, 16).toString('latin1')).toBe('SQLite format 3\0');
    openDatabase(file).close();
  });
});

describe('opening a key store', () => {
  it('a file that is not SQLite: LEDGER_DAMAGED naming the key store, left as it was', () => {
    const file = path.join(dir, 'state', 'k_0123456789ab.db');
    mkdirSync(path.dirname(file));
    writeFileSync(file, 'x');
    const e = refusal(() => KeyStore.open(file));
    expect(e.code).toBe('LEDGER_DAMAGED');
    expect(e.message).toMatch(
      /^\S+k_0123456789ab\.db is not a darkroom key store: .*; move it away, or set DARKROOM_STATE_DIR to another folder$/,
    );
    expect(readFileSync(file, 'utf8')).toBe('x');
  });

  it('a state folder that cannot be made under procfs: KEY_STORE at once', () => {
    const e = refusal(() => KeyStore.open('/proc/darkroom-test/state/k_0123456789ab.db'));
    expect(e.code).toBe('KEY_STORE');
    expect(e.message).toContain('(ENOENT)');
  });
});
