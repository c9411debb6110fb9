import { type Ledger } from '../ledger/index.js';
import { LOG_ONLY, type Logger } from '../log.js';
import { haltRun, type RunState } from '../stages/context.js';
import { EXIT, LedgerMovedError } from '../errors.js';

/**
 * Before each call a lane dispatches and each download: is the ledger still the file at its
 * path? If it was moved, replaced or deleted, the run stops at once (exit 2), so nothing more
 * is paid for into a ledger the next run will not find; calls already in flight finish and
 * are recorded in the file this process has open. One stat per check.
 *
 * Returns true while the work may go ahead.
 */
export function ledgerGuard(ledger: Ledger, run: RunState, log: Logger, onHalt: () => void): () => boolean {
  return () => {
    if (run.halt?.kind === 'ledger') return false;
    try {
      ledger.checkFile();
      return true;
    } catch (err) {
      if (!(err instanceof LedgerMovedError)) throw err;
      haltRun(run, { kind: 'ledger', message: err.message, exitCode: EXIT.usage, immediate: true });
      log.error({ ledger: err.file, change: err.change, ...LOG_ONLY }, err.message);
      onHalt();
      return false;
    }
  };
}
