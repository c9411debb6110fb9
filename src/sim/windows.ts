/**
 * The audit's window counts over sorted call times. A window of span S admits a call at time
 * t when fewer than `limit` recorded calls lie in (t − S, t], the boundary the live windows
 * use too (src/spec/window.ts), so "at most N in any S" means the same thing to the server
 * and to whoever checks a client against it.
 */

/** Calls in (now − span, now]. `sorted` is ascending. */
export function countInWindow(sorted: readonly number[], now: number, spanMs: number): number {
  const from = lowerBoundAbove(sorted, now - spanMs);
  const to = lowerBoundAbove(sorted, now);
  return to - from;
}

/**
 * The most calls found together in any window of `spanMs`, exactly: two calls share a
 * window when they are less than `spanMs` apart. A maximal window can always be slid until
 * it ends on a call, so checking every call as the window's right end is enough.
 */
export function maxInAnyWindow(sorted: readonly number[], spanMs: number): number {
  let best = 0;
  let left = 0;
  for (let right = 0; right < sorted.length; right++) {
    while (sorted[left]! <= sorted[right]! - spanMs) left++;
    best = Math.max(best, right - left + 1);
  }
  return best;
}

/** Index of the first element > x. */
function lowerBoundAbove(sorted: readonly number[], x: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Insert keeping ascending order; a system clock may step back, so do not assume appends. */
export function insertSorted(sorted: number[], x: number): void {
  if (sorted.length === 0 || sorted[sorted.length - 1]! <= x) {
    sorted.push(x);
    return;
  }
  sorted.splice(lowerBoundAbove(sorted, x), 0, x);
}
