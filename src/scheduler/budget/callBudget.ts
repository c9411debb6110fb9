import { RollingWindow } from '../../spec/window.js';
import { shareAt, type ShareState } from './keyShare.js';

export interface BudgetLimits {
  readonly callsPerMinute: number;
  readonly callsPerHour: number;
}

/**
 * Our clock stamps a call when it leaves; the server stamps it when it arrives, a little
 * later and by a varying amount. Widening each window by this margin keeps two calls we
 * count 60 s apart from landing 59.9 s apart at the server. 1 s costs 1.7% of the
 * minute window and 0.03% of the hour window, the one that binds on long runs.
 */
export const ARRIVAL_MARGIN_MS = 1000;

/** One key's call budget: the minute and hour windows, plus pauses the server asked for. */
export class CallBudget {
  readonly minute: RollingWindow;
  readonly hour: RollingWindow;
  /** This machine's own calls of the minute window (the others' are in `minute` too): what its share counts. */
  readonly own: RollingWindow;
  /** The machine's share of the key (keyShare.ts); undefined: the whole key. */
  private share: ShareState | undefined;
  private pausedUntil = 0;
  private createsAhead: 'soon' | 'later' | 'none' = 'soon';
  private readonly pace: { perMs: number; capacity: number; tokens: number; at: number; on: boolean; fullMs: number };

  /**
   * @param createReserve places in each window that only creates may take. When calls are
   *   paced at the hour rate the hour window is always nearly full; without a reserve a
   *   create into a slot that just came free would wait seconds for the oldest call to
   *   leave it, and that wait is slot time lost (W2 lost 0.7 s a task so).
   */
  constructor(
    limits: BudgetLimits,
    past: readonly number[] = [],
    readonly marginMs = ARRIVAL_MARGIN_MS,
    readonly createReserve = 3,
  ) {
    this.minute = new RollingWindow(limits.callsPerMinute, 60_000 + marginMs);
    this.hour = new RollingWindow(limits.callsPerHour, 3_600_000 + marginMs);
    this.own = new RollingWindow(limits.callsPerMinute, 60_000 + marginMs);
    for (const t of past) {
      this.minute.record(t);
      this.hour.record(t);
      this.own.record(t);
    }
    const capacity = Math.max(2, Math.round(limits.callsPerHour / 100));
    this.pace = { perMs: limits.callsPerHour / this.hour.spanMs, capacity, tokens: capacity, at: Number.NaN, on: false, fullMs: 0 };
  }

  /**
   * The minute window's places kept for creates: createReserve of 100 (3%), but never more
   * than one in 30 of a smaller window — on a key allowed 20 calls a minute, 3 kept places
   * would be 15% of the calls, which uploads and polls could never spend.
   */
  get minuteReserve(): number {
    return Math.min(this.createReserve, Math.max(1, Math.floor(this.minute.limit / 30)));
  }

  /**
   * Which creates may still come, for the places kept for them. `soon`: a slot is free, or a
   * poll in flight may free one — both windows keep their places. `later`: every slot is
   * held by a task no poll is looking at — a poll may take the minute's kept places, and the
   * create it may free takes the next: a window left a call short leaves that call to a later
   * one (on a key allowed 20 calls a minute, one window in three went out a call short so, its
   * last place kept while three tasks waited for their polls, and the last create of the job
   * fell a window later: bench tight-key); the hour's stay kept, as paced calls leave its
   * places one at a time. `none`: nothing is left to create,
   * and the last polls may take every place. This process's own view, like the pacing: the
   * kept places order its own calls, they are no margin of the windows.
   */
  setCreatesAhead(ahead: 'soon' | 'later' | 'none'): void {
    this.createsAhead = ahead;
  }

  /**
   * Hour pacing. When the work left needs more calls than the hour window has room for,
   * the hour binds, and spending faster than callsPerHour/3600 s only moves the stall
   * later while it hides from the poller which resource binds. So calls are then paced
   * by a small token bucket at the hour rate. Off when the rest fits, so short runs and
   * the last hour of a long one go at the minute window's and the slots' speed.
   */
  setPacing(on: boolean, now: number): void {
    this.refill(now);
    this.pace.on = on;
  }

  get pacing(): boolean {
    return this.pace.on;
  }

  /**
   * When the pacing bucket is (or will be, with no call before) full: from then on every
   * moment without a call is a call the hour lost for good. NaN while not paced.
   */
  bucketFullAt(now: number): number {
    if (!this.pace.on) return Number.NaN;
    this.refill(now);
    return now + Math.ceil(Math.max(0, this.pace.capacity - this.pace.tokens - 1e-9) / this.paceRate(now));
  }

  /** Room left in the hour window now. */
  hourHeadroom(now: number): number {
    return this.hour.limit - this.hour.count(now);
  }

  /**
   * When the next call may leave. A create into a slot that just came free is worth more
   * than any poll: it may use the windows' reserve, and it skips the pacing bucket, leaving
   * it in debt for the polls after it to repay.
   *
   * Under a share of the key (keyShare.ts) this machine's own calls stay within the share
   * of the minute window, and are spaced at least half the share's mean gap apart: calls
   * that waited for a window to free go out over the following seconds, not at once.
   */
  availableAt(now: number, create = false): number {
    const minuteKept = create || this.createsAhead !== 'soon' ? 0 : this.minuteReserve;
    const hourKept = create || this.createsAhead === 'none' ? 0 : this.createReserve;
    let at = Math.max(this.pausedUntil, this.minute.nextFreeAt(now, minuteKept), this.hour.nextFreeAt(now, hourKept));
    if (this.pace.on && !create) {
      this.refill(now);
      if (this.pace.tokens < 1) at = Math.max(at, now + Math.ceil((1 - this.pace.tokens) / this.paceRate(now)));
    }
    const cap = this.shareCap(now);
    if (cap !== undefined) {
      at = Math.max(at, this.own.nextFreeAt(now, this.own.limit - cap));
      const last = this.own.latest(now);
      if (last !== undefined) at = Math.max(at, last + Math.ceil(this.own.spanMs / (2 * cap)));
    }
    return at;
  }

  /**
   * What this machine spends of the minute window, as a fraction of its limit: its own
   * calls of the last minute, or, begun less than a minute ago, at the rate since its first
   * (8 calls in the first 8 s of a run are not a sixth of a window of 40).
   */
  ownSpent(now: number): number {
    const first = this.own.earliest(now);
    if (first === undefined) return 0;
    const span = this.own.spanMs;
    return (this.own.count(now) / this.minute.limit) * (span / Math.min(span, Math.max(now - first, span / 6)));
  }

  /** The machine's share of the key now (1: the whole key). */
  shareAt(now: number): number {
    return shareAt(this.share, now);
  }

  get shareState(): ShareState | undefined {
    return this.share;
  }

  setShare(s: ShareState | undefined): void {
    this.share = s;
  }

  /** Calls a minute this machine may make under its share, or undefined under none. */
  private shareCap(now: number): number | undefined {
    const f = shareAt(this.share, now);
    return f < 1 ? Math.max(1, Math.floor(f * this.minute.limit)) : undefined;
  }

  take(now: number): void {
    this.minute.record(now);
    this.hour.record(now);
    this.own.record(now);
    this.refill(now);
    this.pace.tokens -= 1;
  }

  /**
   * Calls that count without spending the pacing bucket: others' (another process, another
   * client of the key) read from the key store. `minute`/`hour` false: that window only.
   */
  record(at: number, windows: { minute: boolean; hour: boolean } = { minute: true, hour: true }): void {
    if (windows.minute) this.minute.record(at);
    if (windows.hour) this.hour.record(at);
  }

  /** A call counted at `from` no longer counts there: never sent (`to` undefined) or sent later, at `to`. */
  move(from: number, to: number | undefined): void {
    const m = this.minute.remove(from);
    const h = this.hour.remove(from);
    const o = this.own.remove(from);
    if (to === undefined || !(m || h)) return;
    // Moved later (sent late, or counted from its answer): it counts in both windows again.
    this.minute.record(to);
    this.hour.record(to);
    if (o) this.own.record(to);
  }

  /** Replace the windows' calls with these (sorted by time), as the key store holds them; `own`: this machine's of the minute. */
  resetWindows(minute: readonly number[], hour: readonly number[], own: readonly number[] = minute): void {
    this.minute.reset(minute);
    this.hour.reset(hour);
    this.own.reset(own);
  }

  get pausedUntilMs(): number {
    return this.pausedUntil;
  }

  /** The pacing bucket's rate: the hour's, times the machine's share of the key. */
  private paceRate(now: number): number {
    return this.pace.perMs * shareAt(this.share, now);
  }

  private refill(now: number): void {
    const p = this.pace;
    if (!Number.isNaN(p.at) && now > p.at) {
      const dt = now - p.at;
      const rate = this.paceRate(now);
      const toFull = Math.max(0, (p.capacity - p.tokens) / rate);
      if (p.on && dt > toFull) p.fullMs += dt - toFull;
      p.tokens = Math.min(p.capacity, p.tokens + dt * rate);
      if (p.capacity - p.tokens < 1e-9) p.tokens = p.capacity;
    }
    p.at = now;
  }

  /**
   * How long, in all, the paced bucket has been full: time in which calls were there to
   * spend and were lost. The poller reads it as "the slots, not the calls, bind".
   */
  unusedMs(now: number): number {
    this.refill(now);
    return this.pace.fullMs;
  }

  /** Server feedback (429/503 Retry-After, RateLimit-Reset): no call before `untilMs`. */
  pauseUntil(untilMs: number): void {
    this.pausedUntil = Math.max(this.pausedUntil, untilMs);
  }

  usage(now: number): { minute: number; hour: number } {
    return { minute: this.minute.count(now), hour: this.hour.count(now) };
  }
}
