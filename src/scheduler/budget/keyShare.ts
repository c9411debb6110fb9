/**
 * A key's share of its call windows when other clients use it too (another machine with the
 * same key and a key store of its own), as TCP shares a link: additive increase,
 * multiplicative decrease. The share is a fraction of the key's limits this machine spends:
 * 1 while the key is not known to be shared. When the service shows others (a 429 on the
 * key's minute or hour window, GET /usage counting calls this machine did not make), the
 * share falls to DECREASE of what this machine was spending, and then grows back by
 * INCREASE_PER_MIN a minute, until the next 429 says the key is full again. Every client
 * doing so converges on a fair split (Chiu and Jain, 1989); a client that stops leaves its
 * part to the others within minutes.
 *
 * The service counts a refused call in its windows (spec: every authenticated call
 * counts), so clients that keep calling at their own full rates keep the window full for
 * ever: two runs of 15 photos on one key of 40 calls a minute had 87% of their calls
 * refused. Under a share each machine's calls are also spaced (CallBudget.availableAt):
 * never a burst when a window frees.
 *
 * The share is machine-wide: kept in the key's store, every darkroom process here spends
 * from it together.
 */

/** What a 429 leaves of the share: 0.7 of what was spent (CUBIC's β; 0.5 wasted a quarter of the window on average). */
const SHARE_DECREASE = 0.7;
/**
 * Added back each minute: 0.1 of the key's limits. Slower wastes more of the window after
 * each fall (two machines on 40 calls a minute climb back from 0.35 to 0.5 in 1.5 min);
 * faster meets the next 429 sooner, and each costs a call or two.
 */
const SHARE_INCREASE_PER_MIN = 0.1;
/** Never below: one call in ten of the window, so a machine is never shut out. */
const SHARE_MIN = 0.1;
/** A 429 within this long of the last fall is the same crowding (calls already in flight): no second fall. */
const SHARE_HOLD_MS = 5_000;

/** The share as last set: `fraction` at `atMs`, growing from then on. */
export interface ShareState {
  readonly fraction: number;
  readonly atMs: number;
}

/**
 * The share at `now` (1: the whole key): INCREASE_PER_MIN a minute at first, faster the
 * longer no 429 came (τ minutes since the fall: + INCREASE·(τ + τ²)), as CUBIC grows its
 * window away from the last loss. Under the others' 429s it grows about linearly (the next
 * comes within a minute or two); once they stop it is the whole key within 3 minutes.
 */
export function shareAt(s: ShareState | undefined, now: number): number {
  if (!s) return 1;
  const tau = Math.max(0, now - s.atMs) / 60_000;
  return Math.min(1, s.fraction + SHARE_INCREASE_PER_MIN * (tau + tau * tau));
}

/**
 * The share after a 429 on the key's window, when this machine spent `spent` of it (its
 * own calls in the window, as a fraction of the limit): DECREASE of the lesser of that and
 * the share, or undefined when the last fall was under SHARE_HOLD_MS ago.
 */
export function shareAfterRefusal(s: ShareState | undefined, spent: number, now: number): ShareState | undefined {
  if (s && now >= s.atMs && now - s.atMs < SHARE_HOLD_MS) return undefined;
  const from = Math.min(shareAt(s, now), Math.max(spent, SHARE_MIN));
  return { fraction: Math.max(SHARE_MIN, SHARE_DECREASE * from), atMs: now };
}

/**
 * The share after GET /usage showed others spent `others` of the minute window (calls the
 * service counted that this machine did not make): none (the whole key) when they spent
 * nothing, as the others have stopped; else what they leave, but never less than half (they
 * give way too, on their next 429), when that is below the share now. Undefined: no change.
 */
export function shareFromUsage(s: ShareState | undefined, others: number, now: number): ShareState | undefined {
  const current = shareAt(s, now);
  if (!(others > 0)) return current < 1 ? { fraction: 1, atMs: now } : undefined;
  const fraction = Math.max(0.5, 1 - others);
  return fraction < current ? { fraction, atMs: now } : undefined;
}

export function parseShare(text: string | undefined): ShareState | undefined {
  if (text === undefined) return undefined;
  try {
    const v = JSON.parse(text) as { fraction?: unknown; atMs?: unknown };
    return typeof v.fraction === 'number' && typeof v.atMs === 'number' ? { fraction: v.fraction, atMs: v.atMs } : undefined;
  } catch {
    return undefined;
  }
}
