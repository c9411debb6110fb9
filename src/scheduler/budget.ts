import { RollingWindow } from './window.js';

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
  private pausedUntil = 0;

  constructor(limits: BudgetLimits, past: readonly number[] = [], marginMs = ARRIVAL_MARGIN_MS) {
    this.minute = new RollingWindow(limits.callsPerMinute, 60_000 + marginMs);
    this.hour = new RollingWindow(limits.callsPerHour, 3_600_000 + marginMs);
    for (const t of past) {
      this.minute.record(t);
      this.hour.record(t);
    }
  }

  /** When the next call may leave. */
  availableAt(now: number): number {
    return Math.max(this.pausedUntil, this.minute.nextFreeAt(now), this.hour.nextFreeAt(now));
  }

  take(now: number): void {
    this.minute.record(now);
    this.hour.record(now);
  }

  /** Server feedback (429/503 Retry-After, RateLimit-Reset): no call before `untilMs`. */
  pauseUntil(untilMs: number): void {
    this.pausedUntil = Math.max(this.pausedUntil, untilMs);
  }

  usage(now: number): { minute: number; hour: number } {
    return { minute: this.minute.count(now), hour: this.hour.count(now) };
  }
}
