// From the modules that define them, not the folders' index files: this is loaded at every
// start, and those indexes bring undici, zod and yaml with them (see main.ts).
import { isApiError } from '../api/errors.js';
import { ConfigError } from '../config/errors.js';
import { LedgerMovedError } from '../ledger/fileCheck.js';
import { KeyStoreError } from '../ledger/keystore.js';
import { LedgerLinkedError } from '../ledger/links.js';
import { LedgerBusyError } from '../ledger/lock.js';
import { LedgerTooNewError } from '../ledger/migrate.js';
import { LedgerMissingError, LedgerUnwritableError } from '../ledger/open.js';
import { GuardArgumentError } from '../run/guardTimes.js';
import { DISK_CODES, OutputWriteError } from '../outputs/outputfs.js';
import { ServiceUrlError } from '../run/serviceUrlError.js';
import { KeyBusyError } from '../scheduler/keyBusy.js';
import { OutputTargetError } from './outputFile.js';
import { UsageError } from './usage.js';

export const EXIT = { ok: 0, someFailed: 1, usage: 2, account: 3, limit: 4, interrupted: 130 } as const;

/** An operator-facing error: one line that says what happened and what to do, and its exit code. */
export function describeError(err: unknown): { exitCode: number; line: string } {
  if (err instanceof ConfigError || err instanceof GuardArgumentError) return { exitCode: EXIT.usage, line: `darkroom: ${err.message}` };
  if (err instanceof OutputTargetError) return { exitCode: EXIT.usage, line: `darkroom: ${err.message}` };
  if (err instanceof UsageError) return { exitCode: EXIT.usage, line: `darkroom: ${err.message} (see darkroom --help)` };
  if (
    err instanceof LedgerMissingError ||
    err instanceof LedgerBusyError ||
    err instanceof LedgerTooNewError ||
    err instanceof LedgerUnwritableError ||
    err instanceof LedgerMovedError ||
    err instanceof LedgerLinkedError
  ) {
    return { exitCode: EXIT.usage, line: `darkroom: ${err.message}` };
  }
  // The key's shared budget: its store cannot be opened, or an account command found no room.
  if (err instanceof KeyStoreError || err instanceof KeyBusyError) {
    return { exitCode: EXIT.usage, line: `darkroom: ${err.message}` };
  }
  // The base URL is not the service, or does not answer (plan's check; a run stops with the same words).
  if (err instanceof ServiceUrlError) return { exitCode: EXIT.usage, line: `darkroom: ${err.message}` };
  if (isApiError(err)) {
    // stop-config: the base URL redirects (any call, account commands included): a config error.
    const exitCode = err.kind === 'stop-account' ? EXIT.account : err.kind === 'stop-config' ? EXIT.usage : EXIT.someFailed;
    return { exitCode, line: `darkroom: ${err.message}` };
  }
  const e = err as { code?: string; message?: string };
  if (e?.code === 'SQLITE_NOTADB' || e?.code === 'SQLITE_CORRUPT') {
    return { exitCode: EXIT.usage, line: `darkroom: the ledger is not a darkroom database or is damaged (${e.code}); check --ledger` };
  }
  // The disk filled under the ledger: SQLite rolled the change back, so the ledger is whole
  // and the run resumes from it once there is room.
  if (e?.code === 'SQLITE_FULL') {
    return { exitCode: EXIT.someFailed, line: 'darkroom: the ledger could not be written: the disk holding it is full (SQLITE_FULL); free space there and run again, nothing is lost' };
  }
  if (err instanceof OutputWriteError) {
    return { exitCode: EXIT.someFailed, line: `darkroom: ${err.message}; free space or fix the folder, then run again` };
  }
  const sys = err as { code?: string; path?: string; syscall?: string };
  if (typeof sys?.code === 'string' && DISK_CODES.has(sys.code) && typeof sys.path === 'string') {
    return { exitCode: EXIT.someFailed, line: `darkroom: ${new OutputWriteError(sys.syscall ?? 'write', sys.path, err).message}; free space or fix permissions, then run again` };
  }
  const msg = (e?.message ?? String(err)).split('\n')[0];
  return { exitCode: EXIT.someFailed, line: `darkroom: unexpected error: ${msg} (details in the log beside the ledger)` };
}
