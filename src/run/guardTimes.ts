import { GuardArgumentError } from '../errors.js';

/**
 * The time arguments of the spending guards: `--max-duration 6h` and `--until 07:00`.
 *
 * Durations are parsed here rather than by a library: `ms` reads "1h" but not "1h30m", and
 * `parse-duration` accepts almost anything ("1 hour and 2", "1e3", negative numbers), which
 * for a flag that decides when to stop spending is worse than a one-line refusal. The
 * grammar is hours, minutes and seconds in that order, each at most once: 90m, 6h, 1h30m,
 * 45s, 2h15m30s.
 */

const DURATION = /^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/;

/** "90m", "6h", "1h30m", "45s" → milliseconds; anything else, or zero, throws GuardArgumentError. */
export function parseDuration(text: string): number {
  const t = text.trim().toLowerCase();
  const m = DURATION.exec(t);
  if (t === '' || !m) throw new GuardArgumentError(`--max-duration: expected a duration like 90m, 6h, 1h30m or 45s, got "${text}"`);
  const [h, min, s] = [m[1], m[2], m[3]].map((v) => (v === undefined ? 0 : Number(v))) as [number, number, number];
  const ms = ((h * 60 + min) * 60 + s) * 1000;
  if (ms <= 0) throw new GuardArgumentError(`--max-duration: expected a duration above zero, got "${text}"`);
  return ms;
}

const CLOCK_TIME = /^([01]?\d|2[0-3]):([0-5]\d)$/;

/**
 * `--until 07:00`: the next moment after `nowMs` when the local clock reads HH:MM (24-hour).
 * Today if that is still ahead, else tomorrow; "now" itself is tomorrow's, so `--until`
 * given the current minute's time means about a day, never an instant stop.
 * Built with the local calendar (setHours), so a DST change in between is counted right.
 */
export function nextLocalTime(nowMs: number, hhmm: string): number {
  const m = CLOCK_TIME.exec(hhmm.trim());
  if (!m) throw new GuardArgumentError(`--until: expected a local time HH:MM (24-hour), like 07:00 or 23:30, got "${hhmm}"`);
  const at = new Date(nowMs);
  at.setHours(Number(m[1]), Number(m[2]), 0, 0);
  if (at.getTime() <= nowMs) {
    at.setDate(at.getDate() + 1);
    at.setHours(Number(m[1]), Number(m[2]), 0, 0);
  }
  return at.getTime();
}

/** Checks `--until` without a clock, for the argument parser. */
export function checkClockTime(hhmm: string): string {
  nextLocalTime(0, hhmm);
  return hhmm.trim();
}
