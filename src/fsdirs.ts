import { mkdirSync, statSync } from 'node:fs';
import { mkdir, stat } from 'node:fs/promises';
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
  const steps = walk(dir);
  for (let s = steps.next(); !s.done; ) {
    const op = s.value;
    s = steps.next(outcome(() => ('stat' in op ? statSync(op.stat).isDirectory() : mkdirSync(op.mkdir, { mode }))));
  }
}

/** makeDirs through the thread pool (for callers that must not block the event loop). */
export async function makeDirsAsync(dir: string, mode?: number): Promise<void> {
  const steps = walk(dir);
  for (let s = steps.next(); !s.done; ) {
    const op = s.value;
    s = steps.next(await outcomeAsync(async () => ('stat' in op ? (await stat(op.stat)).isDirectory() : mkdir(op.mkdir, { mode }))));
  }
}

type Op = { readonly stat: string } | { readonly mkdir: string };
/** A stat says whether the path is a folder; a mkdir says nothing; either may fail. */
type Outcome = { readonly folder?: boolean; readonly err?: NodeJS.ErrnoException };

/** The calls makeDirs makes, in order, each told how the last went: one walk for the sync and async forms. */
function* walk(dir: string): Generator<Op, void, Outcome> {
  const missing: string[] = [];
  for (let at = path.resolve(dir); ; at = path.dirname(at)) {
    const found = yield { stat: at };
    if (found.err) {
      if (found.err.code !== 'ENOENT' || path.dirname(at) === at) throw found.err;
      missing.push(at);
      continue;
    }
    if (found.folder) break;
    // A file: where the folder itself should be, or on the way to it, as mkdir would say.
    throw missing.length === 0 ? errnoError('EEXIST', 'file already exists', at) : errnoError('ENOTDIR', 'not a directory', missing[missing.length - 1]!);
  }
  for (const d of missing.reverse()) {
    const made = yield { mkdir: d };
    if (!made.err) continue;
    // Made meanwhile by someone else is as good; anything else in the way is not.
    if (made.err.code === 'EEXIST' && (yield { stat: d }).folder) continue;
    throw made.err;
  }
}

function outcome(fn: () => unknown): Outcome {
  try {
    return { folder: fn() === true };
  } catch (err) {
    return { err: err as NodeJS.ErrnoException };
  }
}

async function outcomeAsync(fn: () => Promise<unknown>): Promise<Outcome> {
  try {
    return { folder: (await fn()) === true };
  } catch (err) {
    return { err: err as NodeJS.ErrnoException };
  }
}

function errnoError(code: string, what: string, at: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: ${what}, mkdir '${at}'`), { code, syscall: 'mkdir', path: at });
}
