// From the modules that define them, not the folders' index files: the CLI loads this at
// every start, and those indexes bring undici, zod and yaml with them (see cli/main.ts).
import { isApiError } from '../api/errors.js';
import { DarkroomError } from '../errors.js';
import { DISK_CODES, OutputWriteError } from '../outputs/outputfs.js';
import { KeyBusyError } from '../scheduler/keyBusy.js';

/**
 * Any error darkroom's work can end with, as a DarkroomError with its code: darkroom's own
 * error classes are DarkroomErrors already; the others (an API answer, the key's budget
 * full, SQLite, the file system) are wrapped, the original kept as `cause`.
 */
export function toDarkroomError(err: unknown): DarkroomError {
  if (err instanceof DarkroomError) return err;
  if (err instanceof KeyBusyError) return new DarkroomError('KEY_BUSY', err.message, { cause: err });
  if (isApiError(err)) {
    // stop-config: the base URL redirects (any call): a config error, as in `run`.
    const code = err.kind === 'stop-account' ? 'ACCOUNT' : err.kind === 'stop-config' ? 'NOT_THE_SERVICE' : 'SERVICE';
    return new DarkroomError(code, err.message, { cause: err });
  }
  const e = err as { code?: unknown; message?: unknown; path?: unknown; syscall?: unknown; name?: unknown };
  if (e?.code === 'SQLITE_NOTADB' || e?.code === 'SQLITE_CORRUPT') {
    return new DarkroomError('LEDGER_DAMAGED', `the ledger is not a darkroom database or is damaged (${e.code}); check --ledger`, { cause: err });
  }
  // The disk filled under the ledger: SQLite rolled the change back, so the ledger is whole
  // and the run resumes from it once there is room.
  if (e?.code === 'SQLITE_FULL') {
    return new DarkroomError(
      'LEDGER_FULL',
      'the ledger could not be written: the disk holding it is full (SQLITE_FULL); free space there and run again, nothing is lost',
      { cause: err },
    );
  }
  if (typeof e?.code === 'string' && DISK_CODES.has(e.code) && typeof e.path === 'string') {
    return new OutputWriteError(typeof e.syscall === 'string' ? e.syscall : 'write', e.path, err);
  }
  if (e?.name === 'AbortError') return new DarkroomError('ABORTED', 'aborted before any work started', { cause: err });
  const msg = String(e?.message ?? err).split('\n')[0];
  return new DarkroomError('INTERNAL', `unexpected error: ${msg} (details in the log beside the ledger)`, { cause: err });
}
