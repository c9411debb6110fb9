/**
 * A rolling window of call times: never more than `limit` calls in any span of
 * `spanMs`. Rolling is the strictest reading of "100 a minute", so it is safe whatever
 * window (fixed or sliding) the server keeps. A call at t counts while it lies in
 * (now − spanMs, now]. Both sides count with it: the client's call budget
 * (src/scheduler/budget/callBudget.ts) and the simulator's limits (src/sim/limits.ts).
 */
/** The spans of the service's two call windows (the spec's "a minute", "an hour"). */
export const MINUTE_MS = 60_000;
export const HOUR_MS = 3_600_000;

export class RollingWindow {
  private times: number[] = [];
  private head = 0;

  constructor(
    readonly limit: number,
    readonly spanMs: number,
  ) {}

  record(at: number): void {
    // Calls are recorded in dispatch order; keep the array sorted even if a caller is late.
    let i = this.times.length;
    while (i > this.head && this.times[i - 1]! > at) i--;
    this.times.splice(i, 0, at);
  }

  /** Forget one call at `at` (a reservation never sent, or one moved): false if there is none. */
  remove(at: number): boolean {
    const i = this.indexOf(at);
    if (i < 0) return false;
    this.times.splice(i, 1);
    return true;
  }

  /** Replace every call with `times` (sorted), as another process's writes are read in. */
  reset(times: readonly number[]): void {
    this.times = [...times];
    this.head = 0;
  }

  count(now: number): number {
    this.evict(now);
    return this.times.length - this.head;
  }

  /** Calls of the window made after `after` and no later than `upTo`. */
  countBetween(now: number, after: number, upTo: number): number {
    this.evict(now);
    let n = 0;
    for (let i = this.head; i < this.times.length; i++) if (this.times[i]! > after && this.times[i]! <= upTo) n++;
    return n;
  }

  /** The earliest call in the window, if any. */
  earliest(now: number): number | undefined {
    return this.count(now) > 0 ? this.times[this.head] : undefined;
  }

  /** The latest call in the window, if any. */
  latest(now: number): number | undefined {
    return this.count(now) > 0 ? this.times[this.times.length - 1] : undefined;
  }

  /** Calls that still fit now. */
  remaining(now: number): number {
    return Math.max(0, this.limit - this.count(now));
  }

  admits(now: number): boolean {
    return this.count(now) < this.limit;
  }

  /** The earliest time at which one more call fits, keeping `reserve` places free for others. */
  nextFreeAt(now: number, reserve = 0): number {
    const n = this.count(now);
    const limit = Math.max(1, this.limit - reserve);
    if (n < limit) return now;
    // the call that must leave the window before one more fits
    return this.times[this.head + (n - limit)]! + this.spanMs;
  }

  /**
   * How long from `now` until `k` calls beyond the room left now could have been made: the
   * k-th oldest call must leave the window first, and past the calls it holds, room comes
   * back at `limit` a span. (For the price of a poll: an hour window full at a run's start
   * gives its next call only an hour after, not 3.6 s later.)
   */
  waitFor(now: number, k: number): number {
    if (k <= 0) return 0;
    const n = this.count(now);
    if (n === 0) return (k / this.limit) * this.spanMs;
    if (k <= n) return Math.max(0, this.times[this.head + k - 1]! + this.spanMs - now);
    return Math.max(0, this.times[this.times.length - 1]! + this.spanMs - now) + ((k - n) / this.limit) * this.spanMs;
  }

  private indexOf(at: number): number {
    let lo = this.head;
    let hi = this.times.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.times[mid]! < at) lo = mid + 1;
      else hi = mid;
    }
    return lo < this.times.length && this.times[lo] === at ? lo : -1;
  }

  private evict(now: number): void {
    const edge = now - this.spanMs;
    while (this.head < this.times.length && this.times[this.head]! <= edge) this.head++;
    if (this.head > 1024 && this.head * 2 > this.times.length) {
      this.times = this.times.slice(this.head);
      this.head = 0;
    }
  }
}
