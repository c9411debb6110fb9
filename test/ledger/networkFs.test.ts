import { existsSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { fileSystemOf, type FsProbe } from '../../src/ledger/fsType.js';
import { Ledger } from '../../src/ledger/index.js';
import { KeyStore } from '../../src/keystore/store.js';
import { makeTempDir } from '../helpers/job.js';
import { NetworkFsError } from '../../src/errors.js';

/**
 * A ledger (or a key's store) on a network file system: SQLite's WAL needs shared memory
 * one host keeps, and network locks are unreliable, so it is refused before anything is
 * written unless the job allows it (ledger.allowNetworkFs), and then opened with the
 * rollback journal. No NAS is at hand: the file system is injected (statfs's magic
 * number, and the mount's type for FUSE).
 */

const dirs: string[] = [];
afterEach(() => {
  while (dirs.length) rmSync(dirs.pop()!, { recursive: true, force: true });
});

function tempDir(): string {
  const d = makeTempDir('darkroom-netfs-');
  dirs.push(d);
  return d;
}

/** A machine whose every path is on a file system of statfs type `magic` (and mount type `mount`, for FUSE). */
const on = (magic: number, mount: string | null = null): FsProbe => ({ statfsType: () => magic, mountType: () => mount });
const NFS = on(0x6969);
const SMB = on(0xfe534d42); // smb2, as the kernel's cifs client reports an SMB2/3 share
const LOCAL = on(0xef53); // ext4

/** The journal mode a SQLite file's header says: 2 in bytes 18 and 19 for WAL, 1 for the rollback journal. */
function journalOf(file: string): 'wal' | 'rollback' {
  const head = readFileSync(file).subarray(18, 20);
  return head[0] === 2 && head[1] === 2 ? 'wal' : 'rollback';
}

describe('fileSystemOf', () => {
  it('names NFS, SMB/CIFS, 9p and network FUSE mounts as network file systems, and local ones not', () => {
    const f = '/archive/darkroom.db';
    expect(fileSystemOf(f, NFS, {})).toEqual({ name: 'nfs', network: true });
    expect(fileSystemOf(f, on(0x517b), {})).toEqual({ name: 'smb', network: true });
    expect(fileSystemOf(f, SMB, {})).toEqual({ name: 'smb2', network: true });
    expect(fileSystemOf(f, on(0xff534d42), {})).toEqual({ name: 'cifs', network: true });
    // statfs's type as a signed 32-bit number, as some platforms give it
    expect(fileSystemOf(f, on(0xff534d42 | 0), {})).toEqual({ name: 'cifs', network: true });
    expect(fileSystemOf(f, on(0x01021997), {})).toEqual({ name: '9p', network: true });
    expect(fileSystemOf(f, on(0x65735546, 'fuse.sshfs'), {})).toEqual({ name: 'fuse.sshfs', network: true });
    expect(fileSystemOf(f, on(0x65735546, 'fuse.rclone'), {})).toEqual({ name: 'fuse.rclone', network: true });
    // FUSE on a local disk (ntfs-3g) is not
    expect(fileSystemOf(f, on(0x65735546, 'fuseblk'), {})).toEqual({ name: 'fuseblk', network: false });
    expect(fileSystemOf(f, LOCAL, {})).toEqual({ name: 'ext4', network: false });
    expect(fileSystemOf(f, on(0x58465342), {})).toEqual({ name: 'xfs', network: false });
  });

  it("looks at the nearest folder that exists (a new ledger's folders are made later), on this machine's disk", () => {
    const seen: string[] = [];
    const d = tempDir();
    const probe: FsProbe = { statfsType: (p) => (seen.push(p), 0xef53), mountType: () => null };
    expect(fileSystemOf(path.join(d, 'not', 'yet', 'darkroom.db'), probe, {}).network).toBe(false);
    expect(seen).toEqual([d]);
    // The real statfs of a temp folder: a local disk here.
    expect(fileSystemOf(path.join(d, 'darkroom.db'), undefined, {}).network).toBe(false);
  });

  it('DARKROOM_TEST_FS_TYPE names the file system instead (end-to-end tests: no NAS is at hand)', () => {
    expect(fileSystemOf('/x/darkroom.db', LOCAL, { DARKROOM_TEST_FS_TYPE: 'nfs' })).toEqual({ name: 'nfs', network: true });
    expect(fileSystemOf('/x/darkroom.db', NFS, { DARKROOM_TEST_FS_TYPE: 'ext4' })).toEqual({ name: 'ext4', network: false });
    expect(fileSystemOf('/x/darkroom.db', LOCAL, { DARKROOM_TEST_FS_TYPE: '0x517b' })).toEqual({ name: 'smb', network: true });
  });
});

describe('a ledger on a network file system', () => {
  it('NFS: refused before anything is written, one line naming the file system and what to do', () => {
    const file = path.join(tempDir(), 'state', 'darkroom.db');
    let err: unknown;
    try {
      Ledger.open(file, { fsProbe: NFS });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(NetworkFsError);
    expect((err as NetworkFsError).code).toBe('NETWORK_FS');
    expect((err as NetworkFsError).exitCode).toBe(2);
    expect((err as Error).message).toBe(
      'the ledger is on a network file system (nfs): SQLite needs a local disk for it; set ledger: to a local path — inputs and outputs may stay on the NAS',
    );
    expect(existsSync(path.dirname(file))).toBe(false);
  });

  it('SMB: refused the same way; allowed by the job, opened with the rollback journal, not WAL', () => {
    const file = path.join(tempDir(), 'darkroom.db');
    expect(() => Ledger.open(file, { fsProbe: SMB })).toThrow(
      /^the ledger is on a network file system \(smb2\): SQLite needs a local disk/,
    );
    expect(existsSync(file)).toBe(false);
    const ledger = Ledger.open(file, { fsProbe: SMB, allowNetworkFs: true });
    try {
      expect(ledger.networkFs).toBe('smb2');
      ledger.setMeta('probe', 'x');
    } finally {
      ledger.close();
    }
    expect(journalOf(file)).toBe('rollback');
    expect(existsSync(`${file}-wal`)).toBe(false);
    expect(existsSync(`${file}-shm`)).toBe(false);
  });

  it("a ledger made in WAL mode before, opened on NFS with the job's leave: switched to the rollback journal", () => {
    const file = path.join(tempDir(), 'darkroom.db');
    Ledger.open(file, { fsProbe: LOCAL }).close();
    expect(journalOf(file)).toBe('wal');
    const again = Ledger.open(file, { fsProbe: NFS, allowNetworkFs: true });
    again.close();
    expect(journalOf(file)).toBe('rollback');
  });

  it('a local disk: WAL, as always, whatever the job allows', () => {
    const file = path.join(tempDir(), 'darkroom.db');
    const ledger = Ledger.open(file, { fsProbe: LOCAL, allowNetworkFs: true });
    expect(ledger.networkFs).toBeNull();
    ledger.close();
    expect(journalOf(file)).toBe('wal');
  });
});

describe("a key's store on a network file system (DARKROOM_STATE_DIR on a NAS)", () => {
  it('is refused with the state folder to move; allowed with the ledger, it uses the rollback journal', () => {
    const dir = path.join(tempDir(), 'state');
    expect(() => KeyStore.openFor(dir, 'k_0a1b2c3d4e5f', { fsProbe: NFS })).toThrow(
      'the key store is on a network file system (nfs): SQLite needs a local disk for it; set DARKROOM_STATE_DIR to a local folder',
    );
    const store = KeyStore.openFor(dir, 'k_0a1b2c3d4e5f', { fsProbe: NFS, allowNetworkFs: true });
    expect(store.networkFs).toBe('nfs');
    store.close();
    expect(journalOf(KeyStore.fileFor(dir, 'k_0a1b2c3d4e5f'))).toBe('rollback');
  });
});
