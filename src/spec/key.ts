import { createHash } from 'node:crypto';

/**
 * A stable, non-reversible name for an API key (L5): the ledger and the simulator's audit
 * store this, never the key.
 */
export function fingerprintKey(key: string): string {
  return 'k_' + createHash('sha256').update(key, 'utf8').digest('hex').slice(0, 12);
}

/** The form shown to people: first two and last two characters. */
export function maskKey(key: string): string {
  if (key.length <= 6) return '***';
  return `${key.slice(0, 2)}…${key.slice(-2)}`;
}

/** Replace every occurrence of each secret in `text` by its mask. */
export function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) {
    if (s.length >= 4) out = out.split(s).join(maskKey(s));
  }
  return out;
}
