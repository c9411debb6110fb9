import type { Logger } from '../log.js';

/** A SQLite file on a network file system the job allowed (ledger.allowNetworkFs): said once, as a warning. */
export function warnNetworkFs(log: Logger, what: string, fs: string): void {
  log.warn(
    { fs },
    `the ${what} is on a network file system (${fs}), as ledger.allowNetworkFs allows: it uses SQLite's rollback journal instead of WAL, so \`darkroom status\` waits while the run writes; never let two machines write it at once, and keep a copy`,
  );
}
