import { createHash } from 'node:crypto';
import { CAPABILITIES, isCapability, type Mode } from '../spec/capabilities.js';
import type { StepConfig } from './schema.js';

/**
 * A job's step list as an identity. Two lists are the same when every
 * step sets the same fields to the same values, in the same order: any field counts
 * (capability, mode, resolution, style, prompt…, and any field added to a step later),
 * because each one changes what the service makes.
 */

/** One step as plain data: only the fields it sets, keys sorted. */
export type CanonicalStep = Readonly<Record<string, string>>;

export function canonicalSteps(steps: readonly StepConfig[]): CanonicalStep[] {
  return steps.map((s) => {
    const out: Record<string, string> = {};
    for (const k of Object.keys(s).sort()) {
      const v = (s as Record<string, unknown>)[k];
      if (v !== undefined && v !== null) out[k] = String(v);
    }
    return out;
  });
}

/** The canonical JSON of a step list: what the ledger keeps, and what the signature hashes. */
export function stepsJson(steps: readonly StepConfig[] | readonly CanonicalStep[]): string {
  return JSON.stringify(canonicalSteps(steps as readonly StepConfig[]));
}

/**
 * The first 16 hex digits of the SHA-256 of the canonical JSON: 64 bits tell apart the
 * handful of lists one ledger ever sees, at a quarter of the bytes per item of the whole
 * digest (100,000 items: 1.6 MB instead of 6.4 MB).
 */
export function stepsSignature(steps: readonly StepConfig[] | readonly CanonicalStep[]): string {
  return createHash('sha256').update(stepsJson(steps)).digest('hex').slice(0, 16);
}

/** For an operator: `restore → upscale (mode general, resolution 4K)`. */
export function describeSteps(steps: readonly CanonicalStep[] | readonly StepConfig[]): string {
  if (steps.length === 0) return '(none)';
  return canonicalSteps(steps as readonly StepConfig[])
    .map((s) => {
      const opts = Object.entries(s)
        .filter(([k]) => k !== 'capability')
        .map(([k, v]) => `${k} ${shown(v)}`);
      return opts.length > 0 ? `${s.capability ?? '?'} (${opts.join(', ')})` : (s.capability ?? '?');
    })
    .join(' → ');
}

/** A word as it is; a prompt quoted, and cut at 40 characters. */
function shown(v: string): string {
  if (/^[\w.-]+$/.test(v)) return v;
  return JSON.stringify(v.length > 40 ? `${v.slice(0, 39)}…` : v);
}

/** The list back from the ledger's canonical JSON; null when it is not one. */
export function parseStepsJson(text: string): CanonicalStep[] | null {
  try {
    const v: unknown = JSON.parse(text);
    if (!Array.isArray(v)) return null;
    return v.map((s) => {
      const out: Record<string, string> = {};
      if (s && typeof s === 'object') for (const [k, x] of Object.entries(s as Record<string, unknown>)) out[k] = String(x);
      return out;
    });
  } catch {
    return null;
  }
}

/**
 * A step as a photo redone by `retry --rejected --mode M` runs it: with that mode where the
 * step's capability takes one (enhance, unblur, upscale), as it is otherwise or when `mode` is null.
 */
export function withMode<S extends StepConfig | CanonicalStep>(step: S, mode: string | null): S {
  if (mode === null) return step;
  const cap = step.capability;
  return cap !== undefined && isCapability(cap) && CAPABILITIES[cap].acceptsMode ? { ...step, mode: mode as Mode } : step;
}
