import { randomUUID } from 'node:crypto';

/** The spec's rule for a client-chosen X-Request-Id; anything else is replaced by the service. */
const VALID = /^[A-Za-z0-9_-]{1,64}$/;

export function isValidRequestId(s: unknown): s is string {
  return typeof s === 'string' && VALID.test(s);
}

/**
 * A fresh X-Request-Id such as `dr-3f2a…` (35 characters with the default prefix).
 * It must be valid, or the service would substitute its own and the ledger's `sending`
 * row (L1) could no longer be matched with the service's records.
 */
export function newRequestId(prefix = 'dr'): string {
  const id = `${prefix}-${randomUUID().replace(/-/g, '')}`;
  if (!isValidRequestId(id)) {
    throw new RangeError(`request id prefix must be at most 30 characters of A-Z a-z 0-9 _ -`);
  }
  return id;
}
