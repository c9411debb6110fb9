import { createHash } from 'node:crypto';
import {
  closeSync,
  constants,
  copyFile,
  fsync,
  fsyncSync,
  openSync,
  read,
  renameSync,
  rmSync,
  statfsSync,
  statSync,
  write,
  writeSync,
} from 'node:fs';
import { OutputWriteError } from '../errors.js';
import { makeDirs } from '../fsdirs.js';

/**
 * The file-system calls that put results in the output folder, in one place, so a test can
 * make any of them fail as a full or read-only disk would (ENOSPC after a few outputs,
 * EROFS, EACCES) without root, a tmpfs or a real full disk. `nodeOutputFs` is the only
 * implementation outside tests.
 *
 * Sync and async forms both exist on purpose: small files (the in-process simulator's
 * results, sidecars) are written in one synchronous turn (see atomic.ts), a streamed result
 * through the thread pool, so a long write or the fsync of a 1 GB file never blocks the
 * event loop (an API call's timeout timer firing late there would turn an answered create
 * into an ambiguous one).
 */
export interface OutputFs {
  /** mkdir -p (fsdirs.ts: without Node's endless loop on procfs). */
  mkdirp(dir: string): void;
  /** Create a new file for writing (O_EXCL: never an existing one), mode 0644; its fd. */
  create(file: string): number;
  /** Write all of `data`. */
  write(fd: number, data: Uint8Array): void;
  writeAsync(fd: number, data: Uint8Array): Promise<void>;
  fsync(fd: number): void;
  fsyncAsync(fd: number): Promise<void>;
  close(fd: number): void;
  /** Copy a file to a path that must not exist yet (COPYFILE_EXCL); the kernel copies, no buffer of ours. */
  copyAsync(from: string, to: string): Promise<void>;
  rename(from: string, to: string): void;
  /** rm -f. */
  remove(file: string): void;
  /** fsync a folder, so a rename in it survives a power cut. */
  syncDir(dir: string): void;
  /** Bytes an unprivileged writer may still use on the file system holding `dir` (statfs f_bavail × f_bsize). */
  freeBytes(dir: string): number;
  /** A file another program wrote (ExifTool): read it through to hash it, and fsync it. */
  sealAsync(file: string): Promise<FileFacts>;
}

/** A file as written: its size and checksums (hex), for the ledger and the manifests. */
export interface FileFacts {
  readonly bytes: number;
  readonly sha256: string;
  readonly sha512: string;
}

/** Both checksums of bytes seen chunk by chunk. */
export class Checksums {
  private readonly s256 = createHash('sha256');
  private readonly s512 = createHash('sha512');
  private n = 0;

  update(chunk: Uint8Array): void {
    this.s256.update(chunk);
    this.s512.update(chunk);
    this.n += chunk.length;
  }

  facts(): FileFacts {
    return { bytes: this.n, sha256: this.s256.digest('hex'), sha512: this.s512.digest('hex') };
  }
}

/** Read in 1 MiB pieces: memory stays flat whatever the file's size. */
const SEAL_CHUNK = 1024 * 1024;

const promised = <T>(fn: (cb: (err: NodeJS.ErrnoException | null, v?: T) => void) => void): Promise<T> =>
  new Promise<T>((resolve, reject) => fn((err, v) => (err ? reject(err) : resolve(v as T))));

export const nodeOutputFs: OutputFs = {
  mkdirp: (dir) => makeDirs(dir),
  create: (file) => openSync(file, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o644),
  write: (fd, data) => {
    for (let at = 0; at < data.length;) at += writeSync(fd, data, at, data.length - at);
  },
  writeAsync: async (fd, data) => {
    for (let at = 0; at < data.length;) {
      at += await promised<number>((cb) => write(fd, data, at, data.length - at, null, (err, n) => cb(err, n)));
    }
  },
  fsync: (fd) => fsyncSync(fd),
  fsyncAsync: (fd) => promised<void>((cb) => fsync(fd, (err) => cb(err))),
  close: (fd) => closeSync(fd),
  copyAsync: async (from, to) => {
    await promised<void>((cb) => copyFile(from, to, constants.COPYFILE_EXCL, (err) => cb(err)));
    const fd = openSync(to, 'r');
    try {
      await promised<void>((cb) => fsync(fd, (err) => cb(err)));
    } finally {
      closeSync(fd);
    }
  },
  rename: (from, to) => renameSync(from, to),
  remove: (file) => rmSync(file, { force: true }),
  syncDir: (dir) => {
    const fd = openSync(dir, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  },
  freeBytes: (dir) => {
    const s = statfsSync(dir);
    return s.bavail * s.bsize;
  },
  sealAsync: (file) => checksumFile(file, true),
};

/** A file's size and checksums, read through in 1 MiB pieces; fsynced too when `sync`. */
export async function checksumFile(file: string, sync = false): Promise<FileFacts> {
  const fd = openSync(file, 'r');
  try {
    const sums = new Checksums();
    const buf = Buffer.allocUnsafe(SEAL_CHUNK);
    for (;;) {
      const n = await promised<number>((cb) => read(fd, buf, 0, SEAL_CHUNK, null, (err, got) => cb(err, got)));
      if (n === 0) break;
      sums.update(buf.subarray(0, n));
    }
    if (sync) await promised<void>((cb) => fsync(fd, (err) => cb(err)));
    return sums.facts();
  } finally {
    closeSync(fd);
  }
}

/** Run one file-system step, turning its errno error into an OutputWriteError naming the step and path. */
export function fsStep<T>(op: string, file: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    throw err instanceof OutputWriteError ? err : new OutputWriteError(op, file, err);
  }
}

export async function fsStepAsync<T>(op: string, file: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw err instanceof OutputWriteError ? err : new OutputWriteError(op, file, err);
  }
}

/** Whether two paths name one file (a hard link, or one name in two cases on a folder that ignores case). */
export function sameFile(a: string, b: string): boolean {
  try {
    const x = statSync(a);
    const y = statSync(b);
    return x.ino === y.ino && x.dev === y.dev;
  } catch {
    return false;
  }
}
