import { clock } from '../clock.js';
import { RATE_LIMIT_SCOPES, type KnownRateLimitScope } from '../spec/scopes.js';
import type { RateLimitInfo } from '../errors.js';

export type HeaderBag = Readonly<Record<string, string | readonly string[] | undefined>>;

/** Case-insensitive lookup; repeated headers are joined the way HTTP folds them. */
export function getHeader(headers: HeaderBag, name: string): string | null {
  const wanted = name.toLowerCase();
  for (const [k, v] of Object.entries(headers)) {
    if (k.toLowerCase() !== wanted || v === undefined) continue;
    return typeof v === 'string' ? v : v.join(', ');
  }
  return null;
}

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];

// Date.parse is not used: V8 happily turns strings like "1" or "x 5" into dates.
const IMF_FIXDATE = /^[A-Za-z]{3}, (\d{2}) ([A-Za-z]{3}) (\d{4}) (\d{2}):(\d{2}):(\d{2}) GMT$/;
const RFC850_DATE = /^[A-Za-z]+, (\d{2})-([A-Za-z]{3})-(\d{2}) (\d{2}):(\d{2}):(\d{2}) GMT$/;
const ASCTIME_DATE = /^[A-Za-z]{3} ([A-Za-z]{3}) {1,2}(\d{1,2}) (\d{2}):(\d{2}):(\d{2}) (\d{4})$/;

interface DateParts {
  day: string;
  mon: string;
  year: number;
  hh: string;
  mm: string;
  ss: string;
}

function dateParts(s: string): DateParts | null {
  let m = IMF_FIXDATE.exec(s);
  if (m) return { day: m[1]!, mon: m[2]!, year: Number(m[3]), hh: m[4]!, mm: m[5]!, ss: m[6]! };
  m = RFC850_DATE.exec(s);
  if (m) {
    // RFC 9110 §5.6.7: a two-digit year is read as the closest one not more than 50 years ahead.
    const yy = Number(m[3]);
    return { day: m[1]!, mon: m[2]!, year: yy < 70 ? 2000 + yy : 1900 + yy, hh: m[4]!, mm: m[5]!, ss: m[6]! };
  }
  m = ASCTIME_DATE.exec(s);
  if (m) return { mon: m[1]!, day: m[2]!, hh: m[3]!, mm: m[4]!, ss: m[5]!, year: Number(m[6]) };
  return null;
}

/** An HTTP-date (RFC 9110 §5.6.7, all three forms) as epoch ms, or null. */
export function parseHttpDate(value: string): number | null {
  const p = dateParts(value.trim());
  if (p === null) return null;
  const month = MONTHS.indexOf(p.mon.toLowerCase());
  const d = Number(p.day);
  const h = Number(p.hh);
  const mi = Number(p.mm);
  const se = Number(p.ss);
  if (month < 0 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60) return null;
  const ms = Date.UTC(p.year, month, d, h, mi, se);
  return Number.isFinite(ms) ? ms : null;
}

/**
 * Retry-After as a wait in ms from `nowMs`: delta-seconds or an HTTP-date. A date in the
 * past means "now" (0). Garbage gives null, so the caller falls back to its own backoff.
 */
export function parseRetryAfter(value: string | null | undefined, nowMs: number = clock.now()): number | null {
  if (value == null) return null;
  const s = value.trim();
  if (s === '') return null;
  // Fractions are not in RFC 9110, but reading "1.5" as 1.5 s is kinder than ignoring it.
  if (/^\d+(\.\d+)?$/.test(s)) {
    const ms = Math.ceil(Number(s) * 1000);
    return Number.isFinite(ms) ? ms : null;
  }
  const at = parseHttpDate(s);
  return at === null ? null : Math.max(0, at - nowMs);
}

function nonNegativeInt(value: string | null): number | null {
  if (value === null) return null;
  const s = value.trim();
  if (!/^\d{1,15}$/.test(s)) return null;
  return Number(s);
}

/**
 * RateLimit-Reset is specified as a Unix timestamp in seconds. The IETF RateLimit draft
 * uses delta-seconds for the same header name, so a value too small to be a current
 * timestamp (< 10^9, before 2001) is read as a delta from now rather than as 1970.
 */
function parseRateLimitReset(value: string | null, nowMs: number = clock.now()): number | null {
  const n = nonNegativeInt(value);
  if (n === null) return null;
  return n < 1e9 ? nowMs + n * 1000 : n * 1000;
}

export function parseRateLimit(headers: HeaderBag, nowMs: number = clock.now()): RateLimitInfo {
  const scopeRaw = getHeader(headers, 'ratelimit-scope')?.trim() ?? '';
  // Control characters would only corrupt logs; a scope is an identifier.
  // eslint-disable-next-line no-control-regex -- a header value with control characters is refused
  const scope = scopeRaw === '' || /[\x00-\x1f\x7f]/.test(scopeRaw) ? null : scopeRaw.slice(0, 64);
  return {
    limit: nonNegativeInt(getHeader(headers, 'ratelimit-limit')),
    remaining: nonNegativeInt(getHeader(headers, 'ratelimit-remaining')),
    resetAtMs: parseRateLimitReset(getHeader(headers, 'ratelimit-reset'), nowMs),
    scope,
  };
}

/** The RateLimit-* headers, or null when the response carries none of them (usable). */
export function rateLimitFrom(headers: HeaderBag, nowMs: number = clock.now()): RateLimitInfo | null {
  const info = parseRateLimit(headers, nowMs);
  return info.limit === null && info.remaining === null && info.resetAtMs === null && info.scope === null ? null : info;
}

export function isKnownScope(scope: string | null): scope is KnownRateLimitScope {
  return scope !== null && (RATE_LIMIT_SCOPES as readonly string[]).includes(scope);
}
