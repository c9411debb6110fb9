import { clock } from '../../clock.js';
import type { ApiError } from '../../errors.js';

/**
 * Exponential backoff with full jitter (AWS Architecture Blog, "Exponential Backoff
 * and Jitter"): uniform in [0, min(cap, base·2^n)).
 *
 * Hand-written rather than p-retry or exponential-backoff: those wrap a function in a
 * retry loop held in memory, while darkroom's retries are due times written to the
 * ledger (they must survive a restart and wait behind the lane's priorities). Only the
 * formula is needed, and `random` is injected so a seeded simulation replays exactly.
 */
export function fullJitter(attempt: number, random: () => number, baseMs = 1000, capMs = 60_000): number {
  const ceiling = Math.min(capMs, baseMs * 2 ** Math.min(attempt, 30));
  return Math.floor(random() * ceiling);
}

/**
 * When to try again after a retryable error: Retry-After if the server gave one (spec
 * retry rule 1), else its RateLimit-Reset, else exponential backoff with full jitter.
 */
export function retryAt(err: ApiError, failures: number, random: () => number): number {
  const now = clock.now();
  if (err.retryAfterMs !== null && err.retryAfterMs >= 0) return now + err.retryAfterMs;
  const reset = err.rateLimit?.resetAtMs ?? null;
  if (reset !== null && reset > now) return reset;
  return now + 1000 + fullJitter(failures, random);
}
