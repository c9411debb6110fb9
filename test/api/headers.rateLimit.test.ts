import { describe, expect, it } from 'vitest';
import { getHeader, isKnownScope, parseRateLimit, rateLimitFrom } from '../../src/api/headers.js';
import { RATE_LIMIT_SCOPES } from '../../src/spec/scopes.js';

const NOW = Date.UTC(2026, 0, 1, 12, 0, 0);
const RESET_S = Math.floor(NOW / 1000) + 42;

describe('parseRateLimit', () => {
  it('reads all four headers, reset as epoch ms', () => {
    const info = parseRateLimit(
      {
        'ratelimit-limit': '100',
        'ratelimit-remaining': '0',
        'ratelimit-reset': String(RESET_S),
        'ratelimit-scope': 'api_key_minute',
      },
      NOW,
    );
    expect(info).toEqual({ limit: 100, remaining: 0, resetAtMs: RESET_S * 1000, scope: 'api_key_minute' });
  });

  it('matches header names case-insensitively', () => {
    const info = parseRateLimit({ 'RateLimit-Limit': '1000', 'RATELIMIT-SCOPE': 'api_key_hour' }, NOW);
    expect(info.limit).toBe(1000);
    expect(info.scope).toBe('api_key_hour');
    expect(getHeader({ 'Retry-After': '3' }, 'retry-after')).toBe('3');
  });

  it('absent headers give nulls, and rateLimitFrom gives null', () => {
    expect(parseRateLimit({}, NOW)).toEqual({ limit: null, remaining: null, resetAtMs: null, scope: null });
    expect(rateLimitFrom({ 'content-type': 'application/json' }, NOW)).toBeNull();
  });

  it('garbled values become null field by field, never throw', () => {
    const info = parseRateLimit(
      {
        'ratelimit-limit': 'lots',
        'ratelimit-remaining': '-1',
        'ratelimit-reset': '12.5',
        'ratelimit-scope': '  ',
      },
      NOW,
    );
    expect(info).toEqual({ limit: null, remaining: null, resetAtMs: null, scope: null });
    expect(parseRateLimit({ 'ratelimit-limit': '99999999999999999999' }, NOW).limit).toBeNull();
    expect(parseRateLimit({ 'ratelimit-scope': 'bad\nscope' }, NOW).scope).toBeNull();
  });

  it('keeps the valid fields when others are garbled', () => {
    const info = rateLimitFrom({ 'ratelimit-limit': 'x', 'ratelimit-remaining': '3' }, NOW);
    expect(info).toEqual({ limit: null, remaining: 3, resetAtMs: null, scope: null });
  });

  it('a reset too small to be a timestamp is read as delta-seconds', () => {
    expect(parseRateLimit({ 'ratelimit-reset': '30' }, NOW).resetAtMs).toBe(NOW + 30_000);
  });

  it.each(RATE_LIMIT_SCOPES)('scope %s is read and known', (scope) => {
    const info = parseRateLimit({ 'ratelimit-scope': scope }, NOW);
    expect(info.scope).toBe(scope);
    expect(isKnownScope(info.scope)).toBe(true);
  });

  it('the spec scopes are exactly the five listed', () => {
    expect([...RATE_LIMIT_SCOPES].sort()).toEqual(
      ['api_key_active_tasks', 'api_key_hour', 'api_key_minute', 'global_hour', 'global_minute'].sort(),
    );
  });

  it('an unknown scope is kept as a string but not known', () => {
    const info = parseRateLimit({ 'ratelimit-scope': 'api_key_day' }, NOW);
    expect(info.scope).toBe('api_key_day');
    expect(isKnownScope(info.scope)).toBe(false);
  });
});
