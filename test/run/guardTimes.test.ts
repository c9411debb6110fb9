import { describe, expect, it } from 'vitest';
import { nextLocalTime, parseDuration } from '../../src/run/guardTimes.js';
import { GuardArgumentError } from '../../src/errors.js';

describe('parseDuration (--max-duration)', () => {
  it('reads hours, minutes and seconds, alone or together', () => {
    expect(parseDuration('90m')).toBe(90 * 60_000);
    expect(parseDuration('6h')).toBe(6 * 3_600_000);
    expect(parseDuration('1h30m')).toBe(90 * 60_000);
    expect(parseDuration('2h15m30s')).toBe((2 * 3600 + 15 * 60 + 30) * 1000);
    expect(parseDuration('45s')).toBe(45_000);
    expect(parseDuration(' 5S ')).toBe(5000);
  });

  it.each(['', '6', 'h', '1.5h', '-1h', '30m1h', '1h 30m', '1d', '0s', '0h0m', 'six hours'])(
    'refuses %j with a one-line usage error',
    (text) => {
      expect(() => parseDuration(text)).toThrow(GuardArgumentError);
      expect(() => parseDuration(text)).toThrow(/--max-duration: expected a duration/);
    },
  );
});

describe('nextLocalTime (--until)', () => {
  // Built from local calendar fields, so the test holds in any time zone.
  const local = (d: number, h: number, m: number, s = 0) => new Date(2026, 0, d, h, m, s).getTime();

  it('is today when the time is still ahead, tomorrow when it has passed or is now', () => {
    expect(nextLocalTime(local(10, 22, 15), '07:00')).toBe(local(11, 7, 0));
    expect(nextLocalTime(local(10, 6, 59, 57), '07:00')).toBe(local(10, 7, 0));
    expect(nextLocalTime(local(10, 7, 0), '07:00')).toBe(local(11, 7, 0));
    expect(nextLocalTime(local(10, 7, 0, 30), '07:00')).toBe(local(11, 7, 0));
    expect(nextLocalTime(local(10, 23, 59), '0:05')).toBe(local(11, 0, 5));
    expect(nextLocalTime(local(31, 23, 0), '23:30')).toBe(local(31, 23, 30));
  });

  it.each(['7', '24:00', '07:60', '7am', '07:00:00', '', '-1:00'])('refuses %j', (text) => {
    expect(() => nextLocalTime(0, text)).toThrow(/--until: expected a local time HH:MM/);
  });
});
