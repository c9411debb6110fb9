import { UsageError } from '../errors.js';
export interface NumberRule {
  readonly min?: number;
  /** The bound itself is refused (a fail rate of 1 would mean endless re-creates). */
  readonly minExclusive?: boolean;
  readonly max?: number;
  readonly maxExclusive?: boolean;
  readonly integer?: boolean;
}

function describe(rule: NumberRule): string {
  const kind = rule.integer ? 'a whole number' : 'a number';
  const lo = rule.min === undefined ? '' : `${rule.minExclusive ? 'above' : 'at least'} ${rule.min}`;
  const hi = rule.max === undefined ? '' : `${rule.maxExclusive ? 'below' : 'at most'} ${rule.max}`;
  return [kind, [lo, hi].filter(Boolean).join(' and ')].filter(Boolean).join(' ');
}

/**
 * A yargs coerce for a numeric option: "Expected X, got Y" instead of a NaN or an
 * out-of-range value reaching the code (where it ended as "unexpected error", exit 1).
 */
export function numberOption(flag: string, rule: NumberRule): (v: unknown) => number {
  return (v: unknown) => {
    const raw = Array.isArray(v) ? v[v.length - 1] : v;
    const n = typeof raw === 'number' ? raw : typeof raw === 'string' && raw.trim() !== '' ? Number(raw) : Number.NaN;
    const ok =
      Number.isFinite(n) &&
      (!rule.integer || Number.isInteger(n)) &&
      (rule.min === undefined || (rule.minExclusive ? n > rule.min : n >= rule.min)) &&
      (rule.max === undefined || (rule.maxExclusive ? n < rule.max : n <= rule.max));
    // yargs has made a word given to a number option NaN already: the word itself is gone.
    const got = typeof raw === 'number' && Number.isNaN(raw) ? 'something else' : JSON.stringify(String(raw));
    if (!ok) throw new UsageError(`--${flag}: expected ${describe(rule)}, got ${got}`);
    return n;
  };
}

/** numberOption for an option without a default: absent stays absent. */
export function optionalNumberOption(flag: string, rule: NumberRule): (v: unknown) => number | undefined {
  const check = numberOption(flag, rule);
  return (v: unknown) => (v === undefined ? undefined : check(v));
}
