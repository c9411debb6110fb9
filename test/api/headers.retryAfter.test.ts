import { describe, expect, it } from 'vitest';
import { parseHttpDate, parseRetryAfter } from '../../src/api/headers.js';

const NOW = Date.UTC(2026, 0, 1, 12, 0, 0);

describe('parseRetryAfter', () => {
  it('reads delta-seconds as milliseconds', () => {
    expect(parseRetryAfter('30', NOW)).toBe(30_000);
    expect(parseRetryAfter(' 0 ', NOW)).toBe(0);
    expect(parseRetryAfter('1.5', NOW)).toBe(1_500);
  });

  it('reads an IMF-fixdate relative to now', () => {
    expect(parseRetryAfter('Thu, 01 Jan 2026 12:00:45 GMT', NOW)).toBe(45_000);
  });

  it('reads the obsolete RFC 850 and asctime forms', () => {
    expect(parseRetryAfter('Thursday, 01-Jan-26 12:01:00 GMT', NOW)).toBe(60_000);
    expect(parseRetryAfter('Thu Jan  1 12:00:10 2026', NOW)).toBe(10_000);
  });

  it('a date in the past means no wait', () => {
    expect(parseRetryAfter('Wed, 31 Dec 2025 23:59:59 GMT', NOW)).toBe(0);
  });

  it.each(['', 'soon', '-5', '1e3', 'x 5', '5 seconds', 'Thu, 32 Jan 2026 12:00:45 GMT', 'Thu, 01 Foo 2026 12:00:45 GMT'])(
    'garbage %j gives null, never throws',
    (v) => {
      expect(parseRetryAfter(v, NOW)).toBeNull();
    },
  );

  it('absent gives null', () => {
    expect(parseRetryAfter(null, NOW)).toBeNull();
    expect(parseRetryAfter(undefined, NOW)).toBeNull();
  });

  it('parseHttpDate refuses what Date.parse would accept', () => {
    expect(Date.parse('1')).not.toBeNaN();
    expect(parseHttpDate('1')).toBeNull();
    expect(parseHttpDate('Sun, 06 Nov 1994 08:49:37 GMT')).toBe(Date.UTC(1994, 10, 6, 8, 49, 37));
  });
});
