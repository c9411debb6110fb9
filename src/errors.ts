/**
 * Every error darkroom throws, and the exit codes of `darkroom`: one module, one code
 * scheme, one exit-code table (docs/errors.md lists them for the operator, and a test holds
 * it equal to ERROR_EXIT below). Every class here is a DarkroomError whose `code` is a
 * DarkroomErrorCode; finer distinctions ride in fields of their own (an API answer's class,
 * a download's `why`), never in a second kind of code.
 *
 * Every part imports this module, so it imports nothing of src/ (eslint holds it to that):
 * the facts its errors carry are declared here, at the bottom (§ The facts errors carry),
 * and the messages that need a part's knowledge are built there and handed in.
 */

/**
 * The exit codes of `darkroom` (docs/ARCHITECTURE.md § Command-line contract): what every
 * command returns as `exitCode`, what `RunSummary.exitCode` and `DarkroomError.exitCode`
 * say, and what the CLI exits with.
 */
export const EXIT = { ok: 0, someFailed: 1, usage: 2, account: 3, limit: 4, interrupted: 130 } as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** What each exit code means, as `darkroom --help` and README say it. */
export const EXIT_MEANING: Readonly<Record<keyof typeof EXIT, string>> = {
  ok: 'every photo done: all that can be done is; inputs darkroom will not send (skipped: unreadable, unsupported, no place for the output) are listed, not counted',
  someFailed: 'finished, some failed, held or not yet downloaded',
  usage: 'usage or config error',
  account: 'stopped by an account problem (invalid key, not subscribed, out of credits)',
  limit: 'stopped at a limit you set (--max-photos, --max-credits, limits.maxCredits, --max-duration, --until); run again to continue',
  interrupted: 'interrupted',
};

/**
 * Every failure kind darkroom reports, one stable string each; codes are only ever added.
 * docs/errors.md gives each one's meaning, exit code and what to do.
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
  | 'NETWORK'
  | 'OUTPUT'
  | 'OUTPUT_WRITE'
  | 'OUTPUT_TARGET'
  | 'DOWNLOAD'
  | 'INPUT'
  | 'METADATA_TOOL'
  | 'METADATA_WRITE'
  | 'ABORTED'
  | 'EVENT_HANDLER'
  | 'REVIEW'
  | 'INTERNAL';

/** The exit code `darkroom` ends with for each kind. */
export const ERROR_EXIT: Readonly<Record<DarkroomErrorCode, ExitCode>> = {
  CONFIG: EXIT.usage,
  USAGE: EXIT.usage,
  LOCKED: EXIT.usage,
  NO_LEDGER: EXIT.usage,
  LEDGER_TOO_NEW: EXIT.usage,
  LEDGER_UNWRITABLE: EXIT.usage,
  LEDGER_MOVED: EXIT.usage,
  LEDGER_LINKED: EXIT.usage,
  LEDGER_DAMAGED: EXIT.usage,
  // SQLite rolled the change back: the ledger is whole and the work resumes once there is room.
  LEDGER_FULL: EXIT.someFailed,
  KEY_STORE: EXIT.usage,
  KEY_BUSY: EXIT.usage,
  NETWORK_FS: EXIT.usage,
  NOT_THE_SERVICE: EXIT.usage,
  SERVICE_UNREACHABLE: EXIT.usage,
  ACCOUNT: EXIT.account,
  SERVICE: EXIT.someFailed,
  NETWORK: EXIT.someFailed,
  OUTPUT: EXIT.usage,
  OUTPUT_WRITE: EXIT.someFailed,
  OUTPUT_TARGET: EXIT.usage,
  // A photo's own trouble: it waits, parked or skipped with its reason; the run goes on.
  DOWNLOAD: EXIT.someFailed,
  INPUT: EXIT.someFailed,
  // Before any upload: install perl, or ask for no metadata; nothing was spent.
  METADATA_TOOL: EXIT.usage,
  METADATA_WRITE: EXIT.someFailed,
  ABORTED: EXIT.interrupted,
  // Library only: the CLI's own handler never throws.
  EVENT_HANDLER: EXIT.someFailed,
  // A decision that cannot stand: nothing was written.
  REVIEW: EXIT.usage,
  INTERNAL: EXIT.someFailed,
};

/**
 * An error darkroom reports: `code` says which kind (stable, for programs to branch on),
 * `message` says what happened and what to do, in one line. `cause` holds the underlying
 * error when one was wrapped.
 */
export class DarkroomError extends Error {
  override readonly name: string = 'DarkroomError';
  /** The exit code the `darkroom` command ends with for this kind. */
  readonly exitCode: ExitCode;

  constructor(
    readonly code: DarkroomErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.exitCode = ERROR_EXIT[code];
  }
}

// ---- the job and the command line ------------------------------------------------------

/** A config problem, reported as one line naming the file, the key path and what was expected. */
export class ConfigError extends DarkroomError {
  override readonly name = 'ConfigError';
  /** `shownPath`: the key as the line names it, when not `keyPath` itself ("step 2: resolution" for steps.1.resolution). */
  constructor(
    readonly file: string,
    readonly keyPath: string,
    readonly detail: string,
    shownPath = keyPath,
  ) {
    super('CONFIG', shownPath ? `${file}: ${shownPath}: ${detail}` : `${file}: ${detail}`);
  }
}

/** A guard's value (`--until`, `--max-duration`…) that cannot be read. */
export class GuardArgumentError extends DarkroomError {
  override readonly name = 'GuardArgumentError';
  constructor(message: string) {
    super('CONFIG', message);
  }
}

/** The job's steps changed under photos already started: the run must be told to redo them. */
export class StepsBlockedError extends DarkroomError {
  override readonly name = 'StepsBlockedError';
  constructor(readonly photos: number) {
    super('CONFIG', `${photos} photo(s) were started under other steps; the run must be told to redo them`);
  }
}

/** A mistake on the command line: one line saying what was wrong and what was expected. */
export class UsageError extends DarkroomError {
  override readonly name = 'UsageError';
  constructor(message: string) {
    super('USAGE', message);
  }
}

/**
 * A review decision that cannot be recorded: no such photo, a photo not done, or (`stale`) an
 * output that changed since it was shown. Nothing was written.
 */
export class ReviewError extends DarkroomError {
  override readonly name = 'ReviewError';
  constructor(
    message: string,
    readonly why: 'refused' | 'stale' = 'refused',
  ) {
    super('REVIEW', message);
  }
}

// ---- the ledger and the key's store ----------------------------------------------------

/** Another run (or retry) holds the ledger (docs/ARCHITECTURE.md § L6). */
export class LedgerBusyError extends DarkroomError {
  override readonly name = 'LedgerBusyError';
  constructor(
    readonly file: string,
    /** undefined: the ledger stayed locked by a writer for the whole busy timeout. */
    readonly holder: LockHolder | undefined,
    readonly verdict: HolderVerdict,
    message: string,
  ) {
    super('LOCKED', message);
  }
}

export class LedgerMissingError extends DarkroomError {
  override readonly name = 'LedgerMissingError';
  constructor(readonly file: string) {
    super('NO_LEDGER', `no ledger at ${file}; start a job with \`darkroom run <jobs.yaml>\` first`);
  }
}

/**
 * The ledger cannot be created or written where it was asked for (a read-only folder or
 * file system, no permission, a path through a file, a full disk): said before anything is sent.
 */
export class LedgerUnwritableError extends DarkroomError {
  override readonly name = 'LedgerUnwritableError';
  constructor(
    readonly file: string,
    readonly reason: string,
  ) {
    super(
      'LEDGER_UNWRITABLE',
      `cannot create or write the ledger ${file}: ${reason}; point --ledger (or ledger: in the jobs file) at a writable place`,
    );
  }
}

export class LedgerTooNewError extends DarkroomError {
  override readonly name = 'LedgerTooNewError';
  constructor(file: string, have: number, know: number, what = 'the ledger') {
    super('LEDGER_TOO_NEW', `${what} ${file} has schema version ${have} but this darkroom knows only up to ${know}; upgrade darkroom`);
  }
}

/** The ledger was moved, replaced or deleted under a run (its message says which, built by ledger/fileCheck.ts). */
export class LedgerMovedError extends DarkroomError {
  override readonly name = 'LedgerMovedError';
  constructor(
    readonly file: string,
    readonly change: LedgerChange,
    message: string,
  ) {
    super('LEDGER_MOVED', message);
  }
}

export class LedgerLinkedError extends DarkroomError {
  override readonly name = 'LedgerLinkedError';
  constructor(
    readonly file: string,
    readonly names: number,
  ) {
    super(
      'LEDGER_LINKED',
      `the ledger ${file} has ${names} names (hard links); SQLite keeps a ledger's journal beside the name it was opened by, ` +
        `so writing it under two names can lose or corrupt it: remove the other names (\`find / -xdev -samefile ${file}\` lists them), or copy the ledger instead of linking it`,
    );
  }
}

/**
 * The file is on a network file system (NFS, SMB/CIFS, a network FUSE mount, 9p …) and the
 * operator did not allow it: nothing was opened, no call was made.
 */
export class NetworkFsError extends DarkroomError {
  override readonly name = 'NetworkFsError';
  constructor(
    readonly file: string,
    readonly fsName: string,
    role: SqliteFileRole,
  ) {
    super('NETWORK_FS', `the ${role.name} is on a network file system (${fsName}): SQLite needs a local disk for it; ${role.localFix}`);
  }
}

/**
 * A non-empty file at the path that is not a SQLite database (a note, a photo): SQLite would
 * take a file shorter than its header for a new database and write over it. Nothing was
 * written; the same code as a damaged ledger, since the file is not one darkroom can use.
 */
export class NotSqliteFileError extends DarkroomError {
  override readonly name = 'NotSqliteFileError';
  constructor(
    readonly file: string,
    role: SqliteFileRole,
  ) {
    super(
      'LEDGER_DAMAGED',
      `${file} is not a darkroom ${role.name}: the file exists and is not a SQLite database, so it was left untouched; ${role.fix}`,
    );
  }
}

/** The key store could not be opened or written: one line naming the file (never the key) and what to do. */
export class KeyStoreError extends DarkroomError {
  override readonly name = 'KeyStoreError';
  constructor(
    readonly file: string,
    cause: unknown,
  ) {
    const why = (cause as { code?: string })?.code ?? (cause as Error)?.message ?? String(cause);
    super('KEY_STORE', `cannot open the key's shared call budget at ${file} (${why}); set DARKROOM_STATE_DIR to a writable folder`);
  }
}

/** What binds when no call may leave now. */
export type Binding = 'minute' | 'hour' | 'pause' | 'pace';

/** An account command found no room in the key's windows within the wait it accepts. */
export class KeyBusyError extends DarkroomError {
  override readonly name = 'KeyBusyError';
  constructor(
    readonly nextAtMs: number,
    readonly binding: Binding,
    waitMs: number,
  ) {
    const when = `${new Date(nextAtMs).toTimeString().slice(0, 8)} (in ${humanWait(waitMs)})`;
    super(
      'KEY_BUSY',
      binding === 'pause'
        ? `the service asked this key to pause: the next call is possible at ${when}; try again then`
        : `the key's ${binding === 'pace' ? 'hour' : binding} window is full (other darkroom processes, or other clients of the key, are using it): the next call is possible at ${when}; try again then`,
    );
  }
}

/** "23 s", "51 min", "2 h 5 min". */
export function humanWait(ms: number): string {
  const s = Math.ceil(ms / 1000);
  if (s < 120) return `${s} s`;
  const m = Math.ceil(s / 60);
  return m < 120 ? `${m} min` : `${Math.floor(m / 60)} h ${m % 60} min`;
}

/**
 * A guarded ledger update found the photo in another state than the caller read: another
 * stage moved it first. The caller drops its step; it never reaches an operator.
 */
export class StaleStateError extends DarkroomError {
  override readonly name = 'StaleStateError';
  constructor(id: number, expected: string, actual: string | undefined) {
    super('INTERNAL', `item ${id} was expected in state ${expected} but is ${actual ?? 'missing'}`);
  }
}

/** A state change the ledger's state machine does not allow: a bug in the caller. */
export class InvalidTransitionError extends DarkroomError {
  override readonly name = 'InvalidTransitionError';
  constructor(
    readonly from: string,
    readonly to: string,
  ) {
    super('INTERNAL', `invalid item transition ${from} → ${to}`);
  }
}

// ---- the service -----------------------------------------------------------------------

/** The base URL is not the service, or does not answer (`plan`'s check, a run's first calls). */
export class ServiceUrlError extends DarkroomError {
  override readonly name = 'ServiceUrlError';
  constructor(message: string, code: 'NOT_THE_SERVICE' | 'SERVICE_UNREACHABLE') {
    super(code, message);
  }
}

/** An API call's failure, its fields already cleaned of secrets (api/errors.ts builds it). */
export interface ApiErrorFields {
  readonly message: string;
  readonly kind: ErrorKind;
  /** How darkroom classes the answer (api/classify.ts): `RATE_LIMITED`, `NOT_SUBSCRIBED`, `OUTCOME_UNKNOWN`, … */
  readonly answer: string;
  readonly httpStatus: number | null;
  readonly businessCode: number | null;
  readonly requestId: string | null;
  readonly sentRequestId: string;
  readonly retryAfterMs: number | null;
  readonly rateLimit: RateLimitInfo | null;
  readonly endpoint: string;
  readonly serverMessage: string | null;
  readonly transportCode: string | null;
}

/**
 * The service refused a call, answered something darkroom cannot use, or the answer was
 * lost. `code`: `ACCOUNT` (the key or account is unusable), `NOT_THE_SERVICE` (the base URL
 * redirects), else `SERVICE`; `kind` says what to do with the call, `answer` what it was.
 */
export class ApiError extends DarkroomError {
  override readonly name = 'ApiError';
  readonly kind: ErrorKind;
  readonly answer: string;
  readonly httpStatus: number | null;
  readonly businessCode: number | null;
  /** The service's requestId (body or X-Request-Id header): its handle for support. */
  readonly requestId: string | null;
  /** The X-Request-Id darkroom sent (recorded before sending, L1). */
  readonly sentRequestId: string;
  readonly retryAfterMs: number | null;
  readonly rateLimit: RateLimitInfo | null;
  /** Path template, e.g. /api/v1/tasks/{businessType}/{taskId}. */
  readonly endpoint: string;
  readonly serverMessage: string | null;
  readonly transportCode: string | null;

  constructor(f: ApiErrorFields) {
    super(f.kind === 'stop-account' ? 'ACCOUNT' : f.kind === 'stop-config' ? 'NOT_THE_SERVICE' : 'SERVICE', f.message);
    this.kind = f.kind;
    this.answer = f.answer;
    this.httpStatus = f.httpStatus;
    this.businessCode = f.businessCode;
    this.requestId = f.requestId;
    this.sentRequestId = f.sentRequestId;
    this.retryAfterMs = f.retryAfterMs;
    this.rateLimit = f.rateLimit;
    this.endpoint = f.endpoint;
    this.serverMessage = f.serverMessage;
    this.transportCode = f.transportCode;
  }
}

/** An answer that is not of the spec's shape; the client turns it into an ApiError (MALFORMED_RESPONSE). */
export class ShapeError extends DarkroomError {
  override readonly name = 'ShapeError';
  constructor(message: string) {
    super('SERVICE', message);
  }
}

/** A request that got no HTTP answer: refused, reset, timed out, aborted. */
export class TransportError extends DarkroomError {
  override readonly name = 'TransportError';
  constructor(
    message: string,
    /** ECONNREFUSED, UND_ERR_HEADERS_TIMEOUT, ABORTED, … */
    readonly transportCode: string,
    /**
     * false: the request was definitely not written (connection refused, DNS, connect
     * timeout, aborted before a connection). true: it may have reached the service.
     */
    readonly sent: boolean,
  ) {
    super('NETWORK', message);
  }
}

// ---- inputs and outputs ----------------------------------------------------------------

/** An input that is not the image its name says (a BMP darkroom cannot read): skipped with this reason. */
export class InputError extends DarkroomError {
  override readonly name = 'InputError';
  constructor(message: string) {
    super('INPUT', message);
  }
}

/** What errno codes mean to an operator, in the words output errors use. */
const ERRNO_MEANING: Readonly<Record<string, string>> = {
  ENOSPC: 'no space left on the device',
  EDQUOT: 'disk quota exceeded',
  EROFS: 'the file system is read-only',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EIO: 'input/output error',
  ENAMETOOLONG: 'file name too long',
  ENOENT: 'no such file or folder',
  ENOTDIR: 'a part of the path is a file, not a folder',
  EEXIST: 'a file is where the folder should be',
};

/**
 * errno codes of a write that say the output folder cannot take files now (full, over
 * quota, read-only, no permission, failing): every later output would meet the same, so
 * the run stops paying for new results and keeps the paid ones to download later.
 * ENAMETOOLONG is not among them: it is one name's problem.
 */
const DISK_CODES: ReadonlySet<string> = new Set(['ENOSPC', 'EDQUOT', 'EROFS', 'EACCES', 'EPERM', 'EIO']);

/** A file-system call on an output failed: which one, where, and whether the whole folder is unusable. */
export class OutputWriteError extends DarkroomError {
  override readonly name = 'OutputWriteError';
  /** The errno code (ENOSPC…), or 'UNKNOWN'. */
  readonly errno: string;
  /** Every output would fail the same way (DISK_CODES). */
  readonly disk: boolean;
  constructor(
    readonly op: string,
    readonly file: string,
    cause: unknown,
  ) {
    const errno = typeof (cause as { code?: unknown })?.code === 'string' ? (cause as { code: string }).code : 'UNKNOWN';
    super('OUTPUT_WRITE', `cannot ${op} ${file}: ${ERRNO_MEANING[errno] ?? String((cause as Error)?.message ?? cause)} (${errno})`);
    this.errno = errno;
    this.disk = DISK_CODES.has(errno);
  }
}

/** A command's output file (`report --out`, a manifest) cannot be written where asked. */
export class OutputTargetError extends DarkroomError {
  override readonly name = 'OutputTargetError';
  constructor(
    readonly target: string,
    why: string,
  ) {
    super('OUTPUT_TARGET', `cannot write ${target}: ${why}`);
  }
}

/** Why a paid result was not fetched or written this time. */
export type DownloadWhy =
  | 'INSECURE_RESULT_URL'
  | 'RESULT_EXPIRED'
  | 'RESULT_HTTP'
  | 'RESULT_TRUNCATED'
  | 'RESULT_NOT_IMAGE'
  | 'RESULT_REDIRECTS'
  | 'DOWNLOAD_DEADLINE'
  | 'DOWNLOAD_FAILED'
  | 'OUTPUT_EXISTS'
  | 'OUTPUT_TAKEN'
  | 'OUTPUT_ESCAPE';

/**
 * A result not fetched or written. `permanent`: trying again in this run would meet the same
 * (a file of the operator's at the output path, a name the file system refuses); the photo
 * stays paid-for and is tried again by the next run.
 */
export class DownloadError extends DarkroomError {
  override readonly name = 'DownloadError';
  constructor(
    readonly why: DownloadWhy,
    message: string,
    readonly permanent: boolean,
  ) {
    super('DOWNLOAD', message);
  }
}

// ---- metadata --------------------------------------------------------------------------

/** Why ExifTool cannot run here, and what to do about it: an operator's line in two halves. */
export class ExifToolUnavailable extends DarkroomError {
  override readonly name = 'ExifToolUnavailable';
  constructor(
    message: string,
    /** What makes it run: "install perl (…)", "set TMPDIR to a writable folder". */
    readonly fix: string,
  ) {
    super('METADATA_TOOL', message);
  }
}

/** ExifTool ran the command and said no ("Error: …"): the command's own failure. */
export class ExifToolError extends DarkroomError {
  override readonly name = 'ExifToolError';
  constructor(message: string) {
    super('METADATA_WRITE', message);
  }
}

/** ExifTool did not answer: its process died (an OOM kill, a `pkill perl`) or hung past the task timeout. */
export class ExifToolCrashed extends DarkroomError {
  override readonly name = 'ExifToolCrashed';
  constructor(message: string, options?: { cause?: unknown }) {
    super('METADATA_WRITE', message, options);
  }
}

/** ExifTool failed to write even the disclosure: the caller keeps the service's bytes as they are. */
export class MetadataWriteError extends DarkroomError {
  override readonly name = 'MetadataWriteError';
  constructor(
    message: string,
    /** ExifTool said it could not write its file (a full disk is likely): the caller looks at the room left. */
    readonly written: boolean,
    options?: { cause?: unknown },
  ) {
    super('METADATA_WRITE', message, options);
  }
}

// ---- a run -----------------------------------------------------------------------------

/**
 * Why a run stopped: the account (`ACCOUNT`), the job (`CONFIG`), the base URL
 * (`NOT_THE_SERVICE`, `SERVICE_UNREACHABLE`: the codes `plan()` gives for the same URL),
 * the output folder (`OUTPUT`), the ledger moved (`LEDGER_MOVED`), no ExifTool
 * (`METADATA_TOOL`), the caller's `onEvent` threw (`EVENT_HANDLER`).
 */
export type RunStopCode =
  'ACCOUNT' | 'CONFIG' | 'NOT_THE_SERVICE' | 'SERVICE_UNREACHABLE' | 'OUTPUT' | 'LEDGER_MOVED' | 'METADATA_TOOL' | 'EVENT_HANDLER';

/**
 * A run that stopped for a problem a rerun cannot get past until it is fixed: its code, and
 * the figures it left in `summary` (the ledger is consistent; a later run continues once the
 * cause is fixed).
 */
export class RunStoppedError extends DarkroomError {
  override readonly name = 'RunStoppedError';
  constructor(
    code: RunStopCode,
    message: string,
    /** The ledger's figures when the run stopped. */
    readonly summary: RunSummary,
    cause?: unknown,
  ) {
    super(code, message, { cause });
  }
}

/**
 * Any error darkroom's work can end with, as a DarkroomError with its code: darkroom's own
 * are DarkroomErrors already; the others (SQLite, the file system, an abort, a bug) are
 * wrapped, the original kept as `cause`.
 */
export function toDarkroomError(err: unknown): DarkroomError {
  if (err instanceof DarkroomError) return err;
  const e = err as { code?: unknown; message?: unknown; path?: unknown; syscall?: unknown; name?: unknown };
  if (e?.code === 'SQLITE_NOTADB' || e?.code === 'SQLITE_CORRUPT') {
    return new DarkroomError('LEDGER_DAMAGED', `the ledger is not a darkroom database or is damaged (${e.code}); check --ledger`, {
      cause: err,
    });
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

// ---- the facts errors carry --------------------------------------------------------

/* Declared here rather than in the parts that make them, so that this module, which every
 * part imports, imports none of them (no import circle): each part imports them from here. */

/**
 * - retry-later: definitely not performed (429, 503); wait and send again.
 * - fix-request: this request will fail the same way until it is changed.
 * - stop-account: the account or key is unusable (401, 24403, 20601); stop the run.
 * - not-found: the task does not exist for this businessType.
 * - ambiguous: the service may have acted. For a create the task may exist: hold the
 *   item, never resend (L2). For a read it is simply retryable.
 * - not-sent: the request never left this process; safe to send again.
 * - stop-config: the configuration is wrong for every call (the base URL redirects): stop
 *   the run at once, exit 2; the call was definitely not performed, so nothing is failed.
 */
export type ErrorKind = 'retry-later' | 'fix-request' | 'stop-account' | 'not-found' | 'ambiguous' | 'not-sent' | 'stop-config';

export interface RateLimitInfo {
  limit: number | null;
  remaining: number | null;
  /** Epoch milliseconds. */
  resetAtMs: number | null;
  /** The scope a 429 names (spec/scopes.ts), or an unknown one kept verbatim: limits "may change". */
  scope: string | null;
}

/** What became of the ledger's path while darkroom had the file open. */
export type LedgerChange =
  /** Renamed: the open file now answers to `to` (found through /proc/self/fd). */
  | { readonly kind: 'moved'; readonly to: string }
  /** Unlinked: the open file has no name left. */
  | { readonly kind: 'deleted' }
  /** Gone from its path, and where it went cannot be told (no /proc). */
  | { readonly kind: 'gone' }
  /** Another file is at the path; `original` says what became of the one that was open. */
  | {
      readonly kind: 'replaced';
      readonly original: { readonly kind: 'moved'; readonly to: string } | { readonly kind: 'deleted' } | { readonly kind: 'gone' };
    };

/**
 * Who holds a ledger's run lock, in enough detail that another process can tell whether
 * that holder still runs. A pid alone is not enough: pids are reused (Linux hands them out
 * again after 32768, or 4 million, starts), so a lock left by a run killed yesterday may
 * name a pid that today belongs to a shell. The process's start time (field 22 of
 * /proc/<pid>/stat, in clock ticks since boot) tells the two apart; the boot id tells a
 * holder from before a reboot (every pid is gone then); the pid namespace tells a holder in
 * another container on this host (whose pids mean nothing here).
 */
export interface ProcessIdentity {
  readonly pid: number;
  readonly host: string;
  /** /proc/sys/kernel/random/boot_id; null where there is no /proc. */
  readonly bootId: string | null;
  /** readlink /proc/self/ns/pid, e.g. `pid:[4026531836]`; null where there is none. */
  readonly pidNs: string | null;
  /** starttime of /proc/<pid>/stat; null where there is no /proc. */
  readonly procStart: string | null;
}

/** The run lock's row (migrations/007_run_lock.sql). */
export interface LockHolder extends ProcessIdentity {
  readonly token: string;
  /** What holds it: 'run' or 'retry --held'. */
  readonly command: string;
  readonly startedMs: number;
}

/**
 * What this process can tell of a holder: `live` (it runs here, now), `gone` (its process
 * ended, its pid now belongs to another process, or the machine rebooted since), or that it
 * cannot be checked from here: `another-host`, or `another-container` (another pid
 * namespace on this host, whose pids mean nothing here).
 */
export type HolderVerdict = 'live' | 'gone' | 'another-host' | 'another-container';

/** What a SQLite file darkroom writes is to the operator: its name in a line, and what to do when the path holds something else. */
export interface SqliteFileRole {
  /** "ledger", "key store". */
  readonly name: string;
  /** What to do instead, in a few words. */
  readonly fix: string;
  /** How to put it on a local disk instead, in a few words. */
  readonly localFix: string;
  /** The folder's mode when darkroom makes it (the key store's state folder is the user's alone). */
  readonly dirMode?: number;
}

/** Where a job's photos stand, as `darkroom status --json` counts them (the run's summary carries the same). */
export interface PhotoCounts {
  /** Photos in all: `total = done + failed + held + pending`. */
  readonly total: number;
  /** Photos with every step's output in place. */
  readonly done: number;
  /** Photos that went wrong and will not finish without a change (`darkroom retry --failed`). */
  readonly failed: number;
  /** Photos an operator must decide on (`darkroom retry --held`, `retry(job, { held: true })`). */
  readonly held: number;
  /** Photos not yet in an end state: a later run takes them on. */
  readonly pending: number;
  /**
   * Inputs darkroom will not send until they change (not an image, damaged, no place for
   * their output): refused before any call; outside `total` and every other figure, and no
   * reason for exit 1.
   */
  readonly skipped: number;
  /** Of `pending`: paid for, output not on disk yet; the next run downloads them first. */
  readonly paidNotDownloaded: number;
}

/** The last event: the ledger's figures after the run, and how the process exits. */
export interface SummaryEvent extends PhotoCounts {
  readonly type: 'summary';
  readonly exitCode: number;
  /** Why the run stopped early (a limit, the account, the disk, a config problem, an interrupt); null when it ran to the end. */
  readonly stopped: { readonly kind: string; readonly message: string } | null;
  /** Credits this run spent as far as known (only with a credit limit set); null otherwise. */
  readonly creditsSpent: number | null;
  readonly atMs: number;
}

/** The run's ending figures: the `summary` event of `run --json`, less its type. */
export interface RunSummary extends Omit<SummaryEvent, 'type'> {
  /**
   * The run was stopped before its end: the caller's signal (or, in an `EVENT_HANDLER`
   * error's summary, the handler's throw) stopped it; nothing new was started, `pending`
   * photos wait for the next run.
   */
  readonly interrupted: boolean;
}
