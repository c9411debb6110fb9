import type { Argv } from 'yargs';
import { GuardArgumentError, checkClockTime, nextLocalTime, parseDuration } from '../run/guardTimes.js';
import type { GuardLimits } from '../run/guards.js';

/** The spending guards and `--json` as `darkroom run` takes them (kept here so main.ts stays a list of commands). */
export interface GuardArgs {
  readonly maxPhotos?: number | undefined;
  readonly maxCredits?: number | undefined;
  readonly maxDuration?: string | undefined;
  readonly until?: string | undefined;
}

export function withGuardOptions<T>(y: Argv<T>) {
  return y
    .option('max-photos', { type: 'number', requiresArg: true, describe: 'start at most N new photos in this run; those started are finished (exit 4 if photos are left)' })
    .option('max-credits', { type: 'number', requiresArg: true, describe: 'stop starting work once N credits were spent since the run began (wins over limits.maxCredits)' })
    .option('max-duration', { type: 'string', requiresArg: true, describe: 'stop starting work after this long, e.g. 90m, 6h, 1h30m; paid work is still finished' })
    .option('until', { type: 'string', requiresArg: true, describe: 'stop starting work at this local time (24-hour HH:MM, the next such moment), e.g. 07:00' })
    .option('json', { type: 'boolean', default: false, describe: 'newline-delimited JSON events on stdout: one per photo done/failed/held/skipped, then a summary (see README)' })
    .example('darkroom run jobs.yaml --max-photos 50', 'try the job on 50 photos first; run again (without it) for the rest')
    .example('darkroom run jobs.yaml --until 07:00 --max-credits 2000', 'an overnight run that stops starting work at 7 am or 2,000 credits');
}

/** The guards of a run from its flags and the job's limits.maxCredits; a bad value throws GuardArgumentError (exit 2). */
export function guardLimitsFrom(a: GuardArgs, maxCreditsOfJob: number | undefined, nowMs: number): GuardLimits {
  const count = (flag: string, v: number | undefined) => {
    if (v === undefined) return undefined;
    if (!Number.isInteger(v) || v <= 0) throw new GuardArgumentError(`${flag}: expected a whole number above zero, got ${String(v)}`);
    return v;
  };
  const until = a.until === undefined ? undefined : checkClockTime(a.until);
  return {
    maxPhotos: count('--max-photos', a.maxPhotos),
    maxCredits: count('--max-credits', a.maxCredits) ?? maxCreditsOfJob,
    maxDurationMs: a.maxDuration === undefined ? undefined : parseDuration(a.maxDuration),
    until,
    untilMs: until === undefined ? undefined : nextLocalTime(nowMs, until),
  };
}
