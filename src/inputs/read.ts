import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { open, readFile } from 'node:fs/promises';
import { clock } from '../clock.js';

/** Reading an input's bytes: its head, the whole file, and its content hash (a photo is its content). */

/**
 * Files up to this size are read with one direct call rather than on the thread pool: a
 * read through fs/promises is four round trips (open, stat, read, close), 1-2 ms of
 * wall-clock time on a busy 2-core machine against ~0.02 ms for a small file read
 * directly, and a simulation's virtual clock waits for every one (W1 reads 10,000 photos
 * twice). 8 MiB from the page cache takes ~2 ms, from an SSD ~10 ms: less than any
 * scheduler's timing cares about. Larger files (TIFF scans) still go to the thread pool.
 */
const SMALL_FILE_BYTES = 8 * 1024 * 1024;

/**
 * The whole file: directly (as one clock.ioTurn, so it still ends after the events already
 * queued, as a thread-pool read did) when `sizeHint` says it is small, else on the thread pool.
 */
export function readWhole(file: string, sizeHint: number | null | undefined): Promise<Buffer> {
  if (sizeHint != null && sizeHint <= SMALL_FILE_BYTES) return clock.ioTurn(() => readFileSync(file));
  return clock.io(readFile(file));
}

/** The first `n` bytes of a file (fewer if it is shorter). */
export async function readHead(file: string, n: number): Promise<Buffer> {
  const fh = await open(file, 'r');
  try {
    const buf = Buffer.alloc(n);
    const { bytesRead } = await fh.read(buf, 0, n, 0);
    return buf.subarray(0, bytesRead);
  } finally {
    await fh.close();
  }
}

/** A photo's content hash: its identity in the ledger (identity.ts). */
export function sha256(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}
