/** What `darkroom retry` is given and gives back, for --held (retry.ts) and --failed (retryFailed.ts). */

export interface RetryArgs {
  readonly jobs?: string | undefined;
  readonly ledger?: string | undefined;
  /** What to retry, named explicitly: `--held` (ambiguous creates, timed-out tasks) or `--failed`. */
  readonly held: boolean;
  /** `--failed`: photos that failed (retryFailed.ts). */
  readonly failed?: boolean | undefined;
  /** `--rejected`: photos rejected in review, made again (retryRejected.ts). */
  readonly rejected?: boolean | undefined;
  /** `--mode M` with --rejected: the mode the steps that take one are made with this time. */
  readonly mode?: string | undefined;
  /** Skip the question (scripts, cron). */
  readonly yes: boolean;
  /** `--break-lock HOST:PID`: take over the lock of a run on another host known to be gone. */
  readonly breakLock?: string | undefined;
}

export interface RetryIo {
  readonly env: NodeJS.ProcessEnv;
  /** Whether a person can be asked (stdin and stderr are a terminal). */
  readonly interactive: boolean;
  /** Ask a yes/no question; resolves true only for an explicit yes. */
  readonly ask: (question: string) => Promise<boolean>;
}

export interface RetryOutcome {
  readonly exitCode: number;
  /** Results, for stdout. */
  readonly stdout: string;
  /** The warning, a refusal or a note, for stderr. */
  readonly stderr: string;
}
