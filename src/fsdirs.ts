import { mkdirSync, statSync } from 'node:fs';
import path from 'node:path';

/**
 * `mkdir -p` without Node's loop. Node's `mkdir(p, { recursive: true })` never returns on
 * procfs and the like: mkdir("/proc/out") says ENOENT, so it makes the parent, mkdir("/proc")
 * says EEXIST, so it tries the child again, for ever, in one synchronous call that no signal
 * interrupts. Here the path is walked up once to the first folder that exists, then each
 * missing folder is made below it with a plain mkdir, and the first refusal is thrown as the
 * system said it: ENOENT (a file system that takes no new folder there), EACCES, EROFS,
 * ENOTDIR (a file on the way), EEXIST (a file where the folder should be).
 *
 * Imports nothing of src/: the ledger, the log, the outputs, the report and the commands all
 * make folders (docs/ARCHITECTURE.md § Import rules).
 */
export function makeDirs(dir: string, mode?: number): void {
  const missing: string[] = [];
  for (let at = path.resolve(dir); ; at = path.dirname(at)) {
    const found = statOf(at);
    if (found === 'missing') {
      if (path.dirname(at) === at) throw errnoError('ENOENT', 'no such file or directory', at);
      missing.push(at);
      continue;
    }
    if (found === 'folder') break;
    // A file: where the folder itself should be, or on the way to it, as mkdir would say.
    throw missing.length === 0
      ? errnoError('EEXIST', 'file already exists', at)
      : errnoError('ENOTDIR', 'not a directory', missing[missing.length - 1]!);
  }
  for (const d of missing.reverse()) {
    try {
      mkdirSync(d, { mode });
    } catch (err) {
      // Made meanwhile by someone else is as good; anything else in the way is not.
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || statOf(d) !== 'folder') throw err;
    }
  }
}

function statOf(at: string): 'folder' | 'file' | 'missing' {
  try {
    return statSync(at).isDirectory() ? 'folder' : 'file';
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 'missing';
    throw err;
  }
}

function errnoError(code: string, what: string, at: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: ${what}, mkdir '${at}'`), { code, syscall: 'mkdir', path: at });
}
