import { closeSync, openSync, readSync } from 'node:fs';
import path from 'node:path';
import fg from 'fast-glob';
import type { Config } from '../config/index.js';
import type { Discovered } from '../ledger/index.js';
import { sniffImage } from './inspect.js';

export interface Found extends Discovered {
  /** Why the file is refused before any call is spent, or null when it looks fine. */
  readonly skipReason: string | null;
}

/**
 * Find the inputs (fast-glob include/exclude under input.dir) and check each one's
 * first bytes and size, so a file the service would refuse never costs a call.
 */
export async function discover(config: Config): Promise<Found[]> {
  const ignore = [...config.input.exclude];
  const outRel = path.relative(config.input.dir, config.output.dir);
  // An output folder inside the input folder must not be read back as input.
  if (outRel === '') throw new Error('output.dir must not be the same folder as input.dir');
  if (!outRel.startsWith('..') && !path.isAbsolute(outRel)) ignore.push(`${outRel.split(path.sep).join('/')}/**`);
  const entries = await fg(config.input.include as string[], {
    cwd: config.input.dir,
    ignore,
    onlyFiles: true,
    dot: false,
    stats: true,
    followSymbolicLinks: true,
    suppressErrors: true,
    unique: true,
  });
  entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return entries.map((e) => {
    const srcPath = path.join(config.input.dir, e.path);
    const size = e.stats?.size ?? 0;
    return { relPath: e.path, srcPath, sizeBytes: size, skipReason: check(srcPath, size, config.limits.maxUploadBytes) };
  });
}

function check(file: string, size: number, maxBytes: number): string | null {
  if (size === 0) return 'empty file';
  if (size > maxBytes) return `file is ${size} bytes, over limits.maxUploadBytes (${maxBytes})`;
  const head = Buffer.alloc(16);
  let fd: number | undefined;
  try {
    fd = openSync(file, 'r');
    const n = readSync(fd, head, 0, head.length, 0);
    if (sniffImage(head.subarray(0, n)) === null) return 'not a JPG, PNG or WEBP image by its content';
  } catch (err) {
    return `cannot read (${(err as NodeJS.ErrnoException).code ?? String(err)})`;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
  return null;
}
