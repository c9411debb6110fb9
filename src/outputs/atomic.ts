import { randomUUID } from 'node:crypto';
import { existsSync, realpathSync, rmSync, type Dirent } from 'node:fs';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { clock } from '../clock.js';
import { crashPoint } from '../ledger/index.js';
import { Checksums, fsStep, fsStepAsync, nodeOutputFs, type FileFacts, type OutputFs } from './outputfs.js';
import { DownloadError } from '../errors.js';

/**
 * Atomic output files (L4): written to a temp file in the target's own folder, fsynced,
 * renamed into place, the folder fsynced. No partial file ever carries an output's name.
 */

export const TEMP_SUFFIX = '.darkroom-tmp';

/**
 * `.dr-<8 hex>.darkroom-tmp`: 25 bytes whatever the target is called. The temp name used
 * to be `.<target name>.<8 hex>.darkroom-tmp`, 23 bytes longer than the target, so any
 * output name of 233 bytes or more went past the 255-byte limit of ext4, XFS, btrfs and
 * APFS (ENAMETOOLONG) — after the photo was paid for. The random part keeps two writes
 * into one folder apart (O_EXCL refuses a clash outright); the suffix is what the
 * start-of-run sweep looks for.
 */
export function tempPathIn(dir: string): string {
  return path.join(dir, `.dr-${randomUUID().slice(0, 8)}${TEMP_SUFFIX}`);
}

/** A body to write: what was read already, and the rest of the stream (null: `head` is all of it). */
export interface BodySource {
  readonly head: Buffer;
  readonly rest: AsyncIterator<Uint8Array> | null;
  /** Called with the total once the last byte is written, before the fsync: throws if the body is not what was announced. */
  readonly check?: (totalBytes: number) => void;
}

/** A file `finalize` wrote and fsynced, with its size and checksums taken as it was written. */
export interface Finalized {
  readonly file: string;
  readonly facts: FileFacts;
}

export interface WriteOptions {
  readonly fs?: OutputFs;
  /** Called once the file is complete and fsynced, just before the rename (the ledger records the file here). */
  readonly beforeRename?: (facts: FileFacts) => void;
  /**
   * Turns the complete temp file into the one to put in place (the input's metadata carried
   * onto it, outputs/metadata.ts): returns that file's path, in the same folder, or `temp`
   * itself to keep it as it is; or a new file already fsynced with its facts (outputs/layout.ts).
   * Runs before the rename, so a kill at any moment leaves either no output or a whole one
   * with its metadata.
   */
  readonly finalize?: (temp: string, dir: string) => Promise<string | Finalized>;
}

/**
 * A small body in one turn of I/O. Synchronous on purpose: the async version (open, write,
 * fsync, close, rename, open folder, fsync, close) is eight thread-pool round trips: 0.2 ms
 * of CPU on tmpfs and 1–2 ms of wall-clock time on a busy 2-core machine, against 0.035 ms
 * for the same calls made directly; a simulation's virtual clock waits for every one of
 * them (W1: 10,000 outputs). For a small file the fsync blocks the process no longer than
 * the ledger's own fsync on the `done` commit that follows. One clock.ioTurn, not inline:
 * the write still ends after the events already queued, as the thread-pool version did, so
 * a simulation's order of events is what it was. Streamed bodies go through writeStream.
 * With `finalize` (another program rewrites the file) the body is written in one turn, then
 * finalized and sealed as a streamed one is.
 */
export async function writeBufferAtomically(target: string, bytes: Buffer, outputDir: string, opts: WriteOptions = {}): Promise<FileFacts> {
  const fs = opts.fs ?? nodeOutputFs;
  const sums = new Checksums();
  sums.update(bytes);
  const facts = sums.facts();
  if (opts.finalize) {
    const { temp, dir } = await clock.ioTurn(() => {
      const dir = prepareFolder(target, outputDir, fs);
      const temp = tempPathIn(dir);
      const fd = fsStep('create a file in', dir, () => fs.create(temp));
      try {
        fsStep('write', target, () => fs.write(fd, bytes));
      } catch (err) {
        fs.close(fd);
        fs.remove(temp);
        throw err;
      }
      fs.close(fd);
      return { temp, dir };
    });
    return settle(temp, target, dir, facts, fs, opts, false);
  }
  return clock.ioTurn(() => {
    const dir = prepareFolder(target, outputDir, fs);
    const temp = tempPathIn(dir);
    const fd = fsStep('create a file in', dir, () => fs.create(temp));
    try {
      fsStep('write', target, () => fs.write(fd, bytes));
      fsStep('fsync', target, () => fs.fsync(fd));
    } catch (err) {
      fs.close(fd);
      fs.remove(temp);
      throw err;
    }
    fs.close(fd);
    finish(temp, target, dir, facts, fs, opts);
    return facts;
  });
}

/**
 * A body as it arrives, chunk by chunk, through the thread pool: memory stays at one chunk
 * (undici's are 64 KiB) whatever the size of the result. A body already whole (`rest`
 * null) is written in one turn as writeBufferAtomically does. Returns the file's size and
 * checksums, taken as the bytes went by (or read back after `finalize` rewrote it).
 */
export async function writeStreamAtomically(
  target: string,
  src: BodySource,
  outputDir: string,
  opts: WriteOptions = {},
): Promise<FileFacts> {
  if (src.rest === null) {
    src.check?.(src.head.length);
    return writeBufferAtomically(target, src.head, outputDir, opts);
  }
  const rest = src.rest;
  return clock.hold(
    (async () => {
      const fs = opts.fs ?? nodeOutputFs;
      const dir = prepareFolder(target, outputDir, fs);
      const temp = tempPathIn(dir);
      const fd = fsStep('create a file in', dir, () => fs.create(temp));
      const sums = new Checksums();
      try {
        await fsStepAsync('write', target, () => fs.writeAsync(fd, src.head));
        sums.update(src.head);
        for (;;) {
          const next = await rest.next();
          if (next.done) break;
          await fsStepAsync('write', target, () => fs.writeAsync(fd, next.value));
          sums.update(next.value);
        }
        const facts = sums.facts();
        src.check?.(facts.bytes);
        // A file finalize replaces is never renamed into place: its fsync would be wasted.
        if (!opts.finalize) await fsStepAsync('fsync', target, () => fs.fsyncAsync(fd));
        fs.close(fd);
        return await settle(temp, target, dir, facts, fs, opts, !opts.finalize);
      } catch (err) {
        try {
          fs.close(fd);
        } catch {
          // closed already
        }
        fs.remove(temp);
        throw err;
      }
    })(),
  );
}

/** A file written piece by piece (lib/manifest.ts: a manifest of a million lines), whole or absent (§ L4). */
export interface AtomicFile {
  /** Append to the temp file. */
  append(data: string | Buffer): void;
  /** fsync the temp file and rename it into place (the folder fsynced); its size and checksums. */
  commit(): Promise<FileFacts>;
  /** Remove the temp file: nothing is put in place. */
  abort(): void;
}

/** A temp file beside `target`, to be appended to and then committed into place, or aborted. */
export function openAtomically(target: string, outputDir: string, opts: WriteOptions = {}): AtomicFile {
  const fs = opts.fs ?? nodeOutputFs;
  const dir = prepareFolder(target, outputDir, fs);
  const temp = tempPathIn(dir);
  const fd = fsStep('create a file in', dir, () => fs.create(temp));
  const sums = new Checksums();
  let open = true;
  const close = () => {
    if (open) fs.close(fd);
    open = false;
  };
  return {
    append(data) {
      const bytes = typeof data === 'string' ? Buffer.from(data) : data;
      fsStep('write', target, () => fs.write(fd, bytes));
      sums.update(bytes);
    },
    commit: () =>
      clock.ioTurn(() => {
        try {
          fsStep('fsync', target, () => fs.fsync(fd));
        } catch (err) {
          close();
          fs.remove(temp);
          throw err;
        }
        close();
        const facts = sums.facts();
        finish(temp, target, dir, facts, fs, opts);
        return facts;
      }),
    abort() {
      close();
      fs.remove(temp);
    },
  };
}

/**
 * Another output from a file already written (a duplicate's copy, an intermediate under a
 * second name): the kernel copies it (copy_file_range where it can), so no result is ever
 * read into memory to be written again; it is read back once, to be checksummed.
 */
export async function copyAtomically(from: string, target: string, outputDir: string, opts: WriteOptions = {}): Promise<FileFacts> {
  const fs = opts.fs ?? nodeOutputFs;
  const dir = prepareFolder(target, outputDir, fs);
  const temp = tempPathIn(dir);
  let facts: FileFacts;
  try {
    await clock.io(fsStepAsync('copy to', target, () => fs.copyAsync(from, temp)));
    facts = await clock.io(fsStepAsync('read back', target, () => fs.sealAsync(temp)));
  } catch (err) {
    fs.remove(temp);
    throw err;
  }
  return settle(temp, target, dir, facts, fs, opts, true);
}

/**
 * The temp file's last steps: `finalize` (when asked), then the file that results is
 * fsynced (and checksummed, when it is a new one) and renamed into place. `synced`: the
 * temp file was fsynced already.
 */
export async function settle(
  temp: string,
  target: string,
  dir: string,
  facts: FileFacts,
  fs: OutputFs,
  opts: WriteOptions,
  synced: boolean,
): Promise<FileFacts> {
  let file = temp;
  let final = facts;
  if (opts.finalize) {
    let made: string | Finalized;
    try {
      made = await opts.finalize(temp, dir);
    } catch (err) {
      fs.remove(temp);
      throw err;
    }
    file = typeof made === 'string' ? made : made.file;
    if (file !== temp) {
      fs.remove(temp);
      if (typeof made !== 'string') final = made.facts;
      else {
        try {
          final = await clock.io(fsStepAsync('fsync', target, () => fs.sealAsync(file)));
        } catch (err) {
          fs.remove(file);
          throw err;
        }
      }
    }
  }
  if (file === temp && !synced) {
    try {
      await clock.io(fsStepAsync('fsync', target, () => fs.sealAsync(file)));
    } catch (err) {
      fs.remove(file);
      throw err;
    }
  }
  finish(file, target, dir, final, fs, opts);
  return final;
}

export function finish(temp: string, target: string, dir: string, facts: FileFacts, fs: OutputFs, opts: WriteOptions): void {
  try {
    opts.beforeRename?.(facts);
  } catch (err) {
    fs.remove(temp);
    throw err;
  }
  crashPoint('download');
  try {
    fsStep('rename a file to', target, () => fs.rename(temp, target));
  } catch (err) {
    fs.remove(temp);
    throw err;
  }
  fsStep('fsync the folder', dir, () => fs.syncDir(dir));
}

/**
 * Make the target's folder. outputPathFor/naming checked the names; a symlink inside the
 * output folder could still lead the write (or the creation of folders) elsewhere, so the
 * real path of the deepest folder that exists is checked before anything is created, and
 * the folder after.
 */
export function prepareFolder(target: string, outputDir: string, fs: OutputFs): string {
  const dir = path.dirname(target);
  fsStep('create the folder', outputDir, () => fs.mkdirp(outputDir));
  let existing = dir;
  while (!existsSync(existing) && existing !== path.dirname(existing)) existing = path.dirname(existing);
  assertInside(existing, outputDir, dir);
  fsStep('create the folder', dir, () => fs.mkdirp(dir));
  assertInside(dir, outputDir, dir);
  return dir;
}

function assertInside(folder: string, outputDir: string, shown: string): void {
  const real = realpathSync.native(folder);
  const back = path.relative(realpathSync.native(outputDir), real);
  if (back.startsWith('..') || path.isAbsolute(back)) {
    throw new DownloadError('OUTPUT_ESCAPE', `${shown} leads outside the output folder (to ${real}) through a symbolic link`, true);
  }
}

/**
 * Remove temp files a killed run left behind (this naming and the longer one before it); none
 * carries an output's name. A folder at a time, each read off the event loop: an output
 * folder of a million files is swept beside the run's work, which writes nothing into the
 * folder before the sweep is over (OutputWriter), so no temp file of its own is ever taken.
 */
export async function sweepTempFiles(outputDir: string): Promise<number> {
  if (!existsSync(outputDir)) return 0;
  let removed = 0;
  const walk = async (dir: string): Promise<void> => {
    let entries: Dirent[];
    try {
      entries = await clock.io(readdir(dir, { withFileTypes: true }));
    } catch {
      return; // gone since, or unreadable: nothing of ours to sweep there
    }
    for (const e of entries) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) await walk(p);
      else if (e.isFile() && e.name.endsWith(TEMP_SUFFIX)) {
        rmSync(p, { force: true });
        removed++;
      }
    }
  };
  await walk(outputDir);
  return removed;
}
