import { checkClockTime, nextLocalTime, parseDuration } from '../../run/guardTimes.js';
import type { GuardLimits } from '../../run/guards.js';
import { GuardArgumentError } from '../../errors.js';

/** The spending guards as `darkroom run` takes them: --max-photos, --max-credits, --max-duration, --until. */
export interface GuardArgs {
  readonly maxPhotos?: number | undefined;
  readonly maxCredits?: number | undefined;
  readonly maxDuration?: string | undefined;
  readonly until?: string | undefined;
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
