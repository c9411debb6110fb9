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

/**
 * Whether a value the job gives where it wants a variable's NAME looks like a key instead:
 * 16 characters or more of a key's alphabet (letters, digits, `_`, `-`, `+`, `=`), with 4
 * digits or more, and not written as variables are (DARKROOM_API_KEY_2). Such a value is
 * shown nowhere, so a key pasted in the wrong field stays out of terminals and CI logs.
 */
export function looksLikeKey(s: string): boolean {
  return (
    s.length >= 16 &&
    /^[A-Za-z0-9_+=-]+$/.test(s) &&
    /[A-Za-z]/.test(s) &&
    (s.match(/\d/g)?.length ?? 0) >= 4 &&
    !/^[A-Z][A-Z0-9_]*$/.test(s)
  );
}
