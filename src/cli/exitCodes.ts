/**
 * The exit codes each command can end with, for its own --help. One list per command, so
 * `credits --help` never shows run's codes. The codes themselves are EXIT in
 * errors.ts; docs/ARCHITECTURE.md § Command-line contract gives their meaning.
 */
export type CommandName = 'run' | 'status' | 'retry' | 'plan' | 'credits' | 'usage' | 'report' | 'manifest' | 'sim' | 'completion';

const CODES = {
  ok: '0 every photo done',
  someFailed: '1 finished, some failed, held or not yet downloaded',
  usage: '2 usage or config error',
  account: '3 stopped by an account problem (invalid key, not subscribed, out of credits)',
  limit: '4 stopped at a limit you set (--max-photos, --max-credits, limits.maxCredits, --max-duration, --until); run again to continue',
  interrupted: '130 interrupted',
} as const;

const PER_COMMAND: Record<CommandName, readonly string[]> = {
  run: [CODES.ok, CODES.someFailed, CODES.usage, CODES.account, CODES.limit, CODES.interrupted],
  status: ['0 the status is printed (with --watch: stopped by Ctrl-C)', CODES.usage],
  retry: ['0 photos put back to work, nothing to retry, or the question declined', CODES.usage],
  plan: [
    '0 the plan is made',
    CODES.usage,
    '3 the account check found a problem a run would stop on (invalid key, not subscribed, fewer credits than needed)',
  ],
  credits: ['0 the credits are printed', CODES.usage, '3 an account problem (invalid key, not subscribed)'],
  usage: ['0 the windows are printed', CODES.usage, '3 an account problem (invalid key, not subscribed)'],
  report: ['0 the report is written', CODES.usage],
  manifest: ['0 the manifests are written', '1 written, and some file darkroom wrote is missing or changed since', CODES.usage],
  sim: ['0 stopped by Ctrl-C', CODES.usage],
  completion: ['0 the script is printed'],
};

/** "Exit codes: 0 … · 2 …." for one command's --help. */
export function exitCodesEpilog(command: CommandName): string {
  return `Exit codes: ${PER_COMMAND[command].join(' · ')}.`;
}

/** The whole table, for `darkroom --help`. */
export function allExitCodesEpilog(): string {
  return `Exit codes: ${[CODES.ok, CODES.someFailed, CODES.usage, CODES.account, CODES.limit, CODES.interrupted].join(' · ')}.`;
}
