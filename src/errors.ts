/**
 * The one error darkroom hands its callers (docs/ARCHITECTURE.md § Import rules: imported by
 * every part, imports nothing). Each failure kind is a subclass or a wrapped cause with its
 * own stable `code`; the CLI's exit code for it rides along, so `darkroom` and a program
 * using the library read the same verdict.
 */

/**
 * Every failure kind darkroom reports, one stable string each. Codes are only ever added.
 *
 * - `CONFIG`: the job is invalid (a key, a path, a guard value), an option passed in code is (`apiKey`, `signal`, `onEvent`), or the job's steps changed under started photos
 * - `USAGE`: a command-line mistake (CLI only)
 * - `LOCKED`: another run (or retry) holds the ledger (docs/ARCHITECTURE.md § L6)
 * - `NO_LEDGER`, `LEDGER_TOO_NEW`, `LEDGER_UNWRITABLE`, `LEDGER_MOVED`, `LEDGER_LINKED`, `LEDGER_DAMAGED`, `LEDGER_FULL`: the ledger file
 * - `KEY_STORE`, `KEY_BUSY`: the key's machine-wide call budget cannot be opened, or has no room soon
 * - `NETWORK_FS`: the ledger or the key's store is on a network file system (NFS, SMB …) and `ledger.allowNetworkFs` is not set
 * - `NOT_THE_SERVICE`, `SERVICE_UNREACHABLE`: the base URL is not the service, or does not answer
 * - `ACCOUNT`: the service refused the account (invalid key, not subscribed, out of credits)
 * - `SERVICE`: any other error answer of the service to a single call
 * - `OUTPUT`: the output folder cannot be written or has no room, before anything was paid
 * - `OUTPUT_WRITE`, `OUTPUT_TARGET`: a file could not be written
 * - `METADATA_TOOL`: ExifTool, which carries the inputs' metadata to the outputs, cannot start (no perl)
 * - `ABORTED`: the caller's signal was aborted before any work started
 * - `EVENT_HANDLER`: the caller's `onEvent` threw: the run stopped as an abort would (its error is the `cause`)
 * - `INTERNAL`: anything else (a bug: the message says where the details are)
 */
export type DarkroomErrorCode =
  | 'CONFIG'
  | 'USAGE'
  | 'LOCKED'
  | 'NO_LEDGER'
  | 'LEDGER_TOO_NEW'
  | 'LEDGER_UNWRITABLE'
  | 'LEDGER_MOVED'
  | 'LEDGER_LINKED'
  | 'LEDGER_DAMAGED'
  | 'LEDGER_FULL'
  | 'KEY_STORE'
  | 'KEY_BUSY'
  | 'NETWORK_FS'
  | 'NOT_THE_SERVICE'
  | 'SERVICE_UNREACHABLE'
  | 'ACCOUNT'
  | 'SERVICE'
  | 'OUTPUT'
  | 'OUTPUT_WRITE'
  | 'OUTPUT_TARGET'
  | 'METADATA_TOOL'
  | 'ABORTED'
  | 'EVENT_HANDLER'
  | 'INTERNAL';

/** The exit code `darkroom` ends with for each kind (docs/ARCHITECTURE.md § Command-line contract). */
const EXIT_CODE: Record<DarkroomErrorCode, 1 | 2 | 3 | 130> = {
  CONFIG: 2,
  USAGE: 2,
  LOCKED: 2,
  NO_LEDGER: 2,
  LEDGER_TOO_NEW: 2,
  LEDGER_UNWRITABLE: 2,
  LEDGER_MOVED: 2,
  LEDGER_LINKED: 2,
  LEDGER_DAMAGED: 2,
  // SQLite rolled the change back: the ledger is whole and the work resumes once there is room.
  LEDGER_FULL: 1,
  KEY_STORE: 2,
  KEY_BUSY: 2,
  NETWORK_FS: 2,
  NOT_THE_SERVICE: 2,
  SERVICE_UNREACHABLE: 2,
  ACCOUNT: 3,
  SERVICE: 1,
  OUTPUT: 2,
  OUTPUT_WRITE: 1,
  OUTPUT_TARGET: 2,
  // Before any upload: install perl, or ask for no metadata; nothing was spent.
  METADATA_TOOL: 2,
  ABORTED: 130,
  // Library only: the CLI's own handler never throws.
  EVENT_HANDLER: 1,
  INTERNAL: 1,
};

/**
 * An error darkroom reports: `code` says which kind (stable, for programs to branch on),
 * `message` says what happened and what to do, in one line. `cause` holds the underlying
 * error when one was wrapped.
 */
export class DarkroomError extends Error {
  override readonly name: string = 'DarkroomError';
  /** The exit code the `darkroom` command ends with for this kind. */
  readonly exitCode: 1 | 2 | 3 | 130;

  constructor(
    readonly code: DarkroomErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.exitCode = EXIT_CODE[code];
  }
}
