// From the modules that define them, not the folders' index files: this is loaded at every
// start, and those indexes bring undici, zod and yaml with them (see main.ts).
import { isApiError } from '../api/errors.js';
import { ConfigError } from '../config/errors.js';
import { KeyStoreError } from '../ledger/keystore.js';
import { LedgerBusyError } from '../ledger/lock.js';
import { LedgerTooNewError } from '../ledger/migrate.js';
import { LedgerMissingError } from '../ledger/open.js';
import { KeyBusyError } from '../scheduler/keyBudget.js';

export const EXIT = { ok: 0, someFailed: 1, usage: 2, account: 3, interrupted: 130 } as const;

/** An operator-facing error: one line that says what happened and what to do, and its exit code. */
export function describeError(err: unknown): { exitCode: number; line: string } {
  if (err instanceof ConfigError) return { exitCode: EXIT.usage, line: `darkroom: ${err.message}` };
  if (err instanceof LedgerMissingError || err instanceof LedgerBusyError || err instanceof LedgerTooNewError) {
    return { exitCode: EXIT.usage, line: `darkroom: ${err.message}` };
  }
  // The key's shared budget: its store cannot be opened, or an account command found no room.
  if (err instanceof KeyStoreError || err instanceof KeyBusyError) {
    return { exitCode: EXIT.usage, line: `darkroom: ${err.message}` };
  }
  if (isApiError(err)) {
    return { exitCode: err.kind === 'stop-account' ? EXIT.account : EXIT.someFailed, line: `darkroom: ${err.message}` };
  }
  const e = err as { code?: string; message?: string };
  if (e?.code === 'SQLITE_NOTADB' || e?.code === 'SQLITE_CORRUPT') {
    return { exitCode: EXIT.usage, line: `darkroom: the ledger is not a darkroom database or is damaged (${e.code}); check --ledger` };
  }
  const msg = (e?.message ?? String(err)).split('\n')[0];
  return { exitCode: EXIT.someFailed, line: `darkroom: unexpected error: ${msg} (details in the log beside the ledger)` };
}
