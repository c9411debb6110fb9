import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import path from 'node:path';

export class LedgerBusyError extends Error {
  override readonly name = 'LedgerBusyError';
  readonly code = 'DARKROOM_LEDGER_BUSY';
  constructor(file: string, pid: number) {
    super(`another darkroom run (pid ${pid}) is using the ledger ${file}; wait for it to end or stop it (darkroom status works alongside)`);
  }
}

/**
 * L6: one `darkroom run` per ledger. A lock file beside the ledger holds the runner's
 * pid; a lock whose process is gone (kill -9, reboot) is stale and taken over.
 */
export function acquireRunLock(ledgerFile: string): () => void {
  const lockFile = `${ledgerFile}.lock`;
  mkdirSync(path.dirname(ledgerFile), { recursive: true });
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(lockFile, 'wx', 0o600);
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return () => {
        try {
          if (readFileSync(lockFile, 'utf8').trim() === String(process.pid)) rmSync(lockFile, { force: true });
        } catch {
          // already gone
        }
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const pid = Number(safeRead(lockFile));
      if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid)) throw new LedgerBusyError(ledgerFile, pid);
      rmSync(lockFile, { force: true });
    }
  }
  throw new Error(`could not take the lock ${lockFile}`);
}

function safeRead(file: string): string {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    return '';
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
