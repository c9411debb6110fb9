/**
 * The exit codes each command can end with, for its own --help. One list per command, so
 * `credits --help` never shows run's codes. The codes and their meanings are EXIT and
 * EXIT_MEANING in src/errors.ts; a command's own reading of a code is said here.
 */
import { EXIT, EXIT_MEANING } from '../errors.js';

export type CommandName =
  'run' | 'status' | 'retry' | 'review' | 'plan' | 'credits' | 'usage' | 'report' | 'manifest' | 'sim' | 'completion';

const CODES = Object.fromEntries((Object.keys(EXIT) as (keyof typeof EXIT)[]).map((k) => [k, `${EXIT[k]} ${EXIT_MEANING[k]}`])) as Record<
  keyof typeof EXIT,
  string
>;

const PER_COMMAND: Record<CommandName, readonly string[]> = {
  run: [CODES.ok, CODES.someFailed, CODES.usage, CODES.account, CODES.limit, CODES.interrupted],
  status: [`${EXIT.ok} the status is printed (with --watch: stopped by Ctrl-C)`, CODES.usage],
  retry: [`${EXIT.ok} photos put back to work, nothing to retry, or the question declined`, CODES.usage],
  review: [CODES.usage, `${EXIT.interrupted} stopped by Ctrl-C (every decision is in the ledger as it is made)`],
  plan: [
    `${EXIT.ok} the plan is made`,
    CODES.usage,
    `${EXIT.account} the account check found a problem a run would stop on (invalid key, not subscribed, fewer credits than needed)`,
  ],
  credits: [`${EXIT.ok} the credits are printed`, CODES.usage, `${EXIT.account} an account problem (invalid key, not subscribed)`],
  usage: [`${EXIT.ok} the windows are printed`, CODES.usage, `${EXIT.account} an account problem (invalid key, not subscribed)`],
  report: [`${EXIT.ok} the report is written`, CODES.usage],
  manifest: [
    `${EXIT.ok} the manifests are written`,
    `${EXIT.someFailed} written, and some file darkroom wrote is missing, changed since, or outside the output folder`,
    CODES.usage,
  ],
  sim: [`${EXIT.ok} stopped by Ctrl-C`, CODES.usage],
  completion: [`${EXIT.ok} the script is printed`],
};

/** "Exit codes: 0 … · 2 …." for one command's --help. */
export function exitCodesEpilog(command: CommandName): string {
  return `Exit codes: ${PER_COMMAND[command].join(' · ')}.`;
}

/** The whole table, for `darkroom --help`. */
export function allExitCodesEpilog(): string {
  return `Exit codes: ${Object.values(CODES).join(' · ')}.`;
}
