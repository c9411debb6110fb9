import { randomUUID } from 'node:crypto';
import { lstat, open, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { clock } from '../../clock.js';
import { makeDirs } from '../../fsdirs.js';
import { OutputTargetError } from '../../errors.js';

/**
 * Every file a user names for darkroom to write (`report --out`, and any later output
 * option) goes through here. A regular file, or a path that does not exist yet, is written
 * to a temp file beside it and renamed into place, so a reader never sees half a report.
 * Anything else is written straight into: `-` and /dev/stdout (the process's stdout, pipe,
 * socket or file alike), a device, a FIFO, and any symbolic link. A rename would replace
 * the link itself: run as root, `report --out /dev/stdout` once turned the machine's
 * /dev/stdout link into a regular file.
 */

export type OutputKind = 'stdout' | 'stderr' | 'stream' | 'file';

export interface OutputTarget {
  readonly kind: OutputKind;
  /** The absolute path written (for `file` and `stream`); null for stdout/stderr. */
  readonly path: string | null;
  /** What to call it in messages: `-`, `stdout`, or the path as given. */
  readonly shown: string;
}

/** What `target` is, from lstat (never following a link, which is what decides "not a regular file"). */
export async function outputTarget(target: string, cwd = process.cwd()): Promise<OutputTarget> {
  if (target === '-' || target === '/dev/stdout') return { kind: 'stdout', path: null, shown: target === '-' ? 'stdout' : target };
  if (target === '/dev/stderr') return { kind: 'stderr', path: null, shown: target };
  const abs = path.resolve(cwd, target);
  let st;
  try {
    st = await clock.io(lstat(abs));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { kind: 'file', path: abs, shown: target };
    throw new OutputTargetError(target, (err as NodeJS.ErrnoException).code ?? String(err));
  }
  if (st.isDirectory()) throw new OutputTargetError(target, 'it is a folder; name a file in it');
  return { kind: st.isFile() ? 'file' : 'stream', path: abs, shown: target };
}

export interface WriteStreams {
  readonly stdout?: NodeJS.WritableStream;
  readonly stderr?: NodeJS.WritableStream;
}

/** Writes `data` to the target as outputTarget() classified it. */
export async function writeOutput(t: OutputTarget, data: string | Buffer, streams: WriteStreams = {}): Promise<void> {
  if (t.kind === 'stdout' || t.kind === 'stderr') {
    // The process's own streams are the CLI's to hand over (below cli/ nothing writes to them on its own).
    const s = t.kind === 'stdout' ? streams.stdout : streams.stderr;
    if (!s) throw new OutputTargetError(t.shown, 'no stream was given to write it to');
    await clock.io(
      new Promise<void>((resolve, reject) => {
        s.write(data, (err) => (err ? reject(err) : resolve()));
      }),
    );
    return;
  }
  const file = t.path!;
  if (t.kind === 'stream') {
    // Opened for writing without creating or renaming anything: O_TRUNC is a no-op on a device or FIFO.
    const fh = await clock.io(open(file, 'w'));
    try {
      await clock.io(fh.writeFile(data));
    } finally {
      await clock.io(fh.close());
    }
    return;
  }
  const dir = path.dirname(file);
  makeDirs(dir);
  const tmp = path.join(dir, `.${path.basename(file).slice(0, 64)}.${randomUUID().slice(0, 8)}.tmp`);
  try {
    const fh = await clock.io(open(tmp, 'wx', 0o644));
    try {
      await clock.io(fh.writeFile(data));
      await clock.io(fh.sync());
    } finally {
      await clock.io(fh.close());
    }
    await clock.io(rename(tmp, file));
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}

/**
 * The folder relative links in the output are written against: the file's own folder, or
 * the current folder for stdout and devices (where the reader is likely to save it).
 */
export function outputBaseDir(t: OutputTarget, cwd = process.cwd()): string {
  return t.kind === 'file' ? path.dirname(t.path!) : cwd;
}
