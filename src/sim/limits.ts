/**
 * The limits the service enforces per key and service-wide: the rolling call windows, the
 * active-task slots, and the 429 answers that name the scope. Decisions (model.ts has the
 * order of checks):
 * - The windows count every authenticated call, the ones answered 429 too: the spec counts
 *   "every authenticated call" and says a 429 consumes no credit, not no call. So a client
 *   that keeps calling into a full window keeps it full (two clients of one key retrying at
 *   their own full rates starve each other). A refused call's Retry-After and
 *   RateLimit-Reset say when a call fits again with the refused call counted. 401s count
 *   nowhere.
 * - When several windows are full, the one that frees last names the scope, so waiting
 *   Retry-After is enough for all of them.
 * - The active-task limit belongs to the key that created the task; a create still
 *   resolving its image holds a slot too.
 */
import { fingerprintKey } from '../spec/key.js';
import { CODES, fail, type SimResponse } from './responses.js';
import type { KnownRateLimitScope } from '../spec/scopes.js';
import { HOUR_MS, MINUTE_MS, RollingWindow } from '../spec/window.js';
import { isActiveAt, type Task } from './tasks.js';

/** One API key's share of the limits. */
export interface Lane {
  fingerprint: string;
  minute: RollingWindow;
  hour: RollingWindow;
  /** Tasks not yet known to be terminal; trimmed lazily by release(). */
  active: Task[];
  /** Creates past the slot check still resolving an external image. */
  creating: number;
}

interface Limited {
  scope: KnownRateLimitScope;
  limit: number;
  freesAt: number;
}

interface LimitsConfig {
  keys: readonly string[];
  limits: { callsPerMinute: number; callsPerHour: number; activeTasks: number };
  global: { callsPerMinute: number; callsPerHour: number };
}

export class Limits {
  private readonly lanesByKey = new Map<string, Lane>();
  private readonly lanesByFingerprint = new Map<string, Lane>();
  private readonly globalMinute: RollingWindow;
  private readonly globalHour: RollingWindow;
  private readonly slotsPerKey: number;

  constructor(cfg: LimitsConfig) {
    const { limits } = cfg;
    for (const key of cfg.keys) {
      if (this.lanesByKey.has(key)) continue;
      const lane: Lane = {
        fingerprint: fingerprintKey(key),
        minute: new RollingWindow(limits.callsPerMinute, MINUTE_MS),
        hour: new RollingWindow(limits.callsPerHour, HOUR_MS),
        active: [],
        creating: 0,
      };
      this.lanesByKey.set(key, lane);
      this.lanesByFingerprint.set(lane.fingerprint, lane);
    }
    this.globalMinute = new RollingWindow(cfg.global.callsPerMinute, MINUTE_MS);
    this.globalHour = new RollingWindow(cfg.global.callsPerHour, HOUR_MS);
    this.slotsPerKey = limits.activeTasks;
  }

  /** The lane of a valid key; undefined for a key the service does not know. */
  laneOf(key: string): Lane | undefined {
    return this.lanesByKey.get(key);
  }

  laneByFingerprint(fp: string): Lane | undefined {
    return this.lanesByFingerprint.get(fp);
  }

  fingerprints(): string[] {
    return [...this.lanesByFingerprint.keys()];
  }

  /** The first limit this call breaks (a create also needs a free slot), or undefined. */
  check(lane: Lane, now: number, isCreate: boolean): Limited | undefined {
    return this.callRateLimit(lane, now) ?? (isCreate ? this.slotLimit(lane, now) : undefined);
  }

  /**
   * A call refused by the call-rate windows, once it is counted: the scope that frees last
   * again (the refused call itself may hold a window longer). Slot refusals keep theirs.
   */
  refusedAgain(lane: Lane, l: Limited, now: number): Limited {
    if (l.scope === 'api_key_active_tasks') return l;
    return this.callRateLimit(lane, now) ?? l;
  }

  /** A call counts in its key's windows and the service's: every authenticated call, answered 429 or not. */
  record(lane: Lane, now: number): void {
    lane.minute.record(now);
    lane.hour.record(now);
    this.globalMinute.record(now);
    this.globalHour.record(now);
  }

  remaining(
    lane: Lane,
    now: number,
  ): { minuteRemaining: number; hourRemaining: number; globalMinuteRemaining: number; globalHourRemaining: number } {
    return {
      minuteRemaining: lane.minute.remaining(now),
      hourRemaining: lane.hour.remaining(now),
      globalMinuteRemaining: this.globalMinute.remaining(now),
      globalHourRemaining: this.globalHour.remaining(now),
    };
  }

  /** Drops tasks that have finished by `now` from the slot lists, handing each to `ended`. */
  release(now: number, ended: (task: Task) => void): void {
    for (const lane of this.lanesByKey.values()) {
      if (lane.active.every((t) => isActiveAt(t, now))) continue;
      const still: Task[] = [];
      for (const t of lane.active) {
        if (isActiveAt(t, now)) still.push(t);
        else ended(t);
      }
      lane.active = still;
    }
  }

  /** Frees a task's slot at once (it vanished). */
  drop(task: Task): void {
    const lane = this.lanesByFingerprint.get(task.keyFingerprint);
    if (lane) lane.active = lane.active.filter((t) => t !== task);
  }

  /** Every task holding a slot, on any key. */
  *active(): Iterable<Task> {
    for (const lane of this.lanesByKey.values()) yield* lane.active;
  }

  tooMany(requestId: string, l: Limited, now: number): SimResponse {
    const retryAfter = Math.max(1, Math.ceil((l.freesAt - now) / 1000));
    return fail(requestId, 429, CODES.BUSY, tooManyMessage(l.scope, l.limit), {
      'ratelimit-limit': String(l.limit),
      'ratelimit-remaining': '0',
      'ratelimit-reset': String(Math.ceil(l.freesAt / 1000)),
      'retry-after': String(retryAfter),
      'ratelimit-scope': l.scope,
    });
  }

  /** An injected 429 (faultInjector.ts) while the key is within every limit; headers only with `retryAfterS`. */
  spurious429(requestId: string, lane: Lane, scope: KnownRateLimitScope, retryAfterS: number | undefined, now: number): SimResponse {
    const limit =
      scope === 'api_key_minute'
        ? lane.minute.limit
        : scope === 'api_key_hour'
          ? lane.hour.limit
          : scope === 'global_minute'
            ? this.globalMinute.limit
            : scope === 'global_hour'
              ? this.globalHour.limit
              : this.slotsPerKey;
    if (retryAfterS !== undefined) return this.tooMany(requestId, { scope, limit, freesAt: now + retryAfterS * 1000 }, now);
    return fail(requestId, 429, CODES.BUSY, tooManyMessage(scope, limit));
  }

  private callRateLimit(lane: Lane, now: number): Limited | undefined {
    const windows: Array<[KnownRateLimitScope, RollingWindow]> = [
      ['api_key_minute', lane.minute],
      ['api_key_hour', lane.hour],
      ['global_minute', this.globalMinute],
      ['global_hour', this.globalHour],
    ];
    let worst: Limited | undefined;
    for (const [scope, w] of windows) {
      if (w.admits(now)) continue;
      const freesAt = w.nextFreeAt(now);
      if (!worst || freesAt > worst.freesAt) worst = { scope, limit: w.limit, freesAt };
    }
    return worst;
  }

  private slotLimit(lane: Lane, now: number): Limited | undefined {
    const limit = this.slotsPerKey;
    if (lane.active.length + lane.creating < limit) return undefined;
    let freesAt = Infinity;
    for (const t of lane.active) freesAt = Math.min(freesAt, t.completesAt);
    // Only in-flight creates hold the slots: they resolve within a fetch timeout.
    if (freesAt === Infinity) freesAt = now + 1000;
    return { scope: 'api_key_active_tasks', limit, freesAt };
  }
}

function tooManyMessage(scope: KnownRateLimitScope, limit: number): string {
  return scope === 'api_key_active_tasks'
    ? `too many active tasks for this API key (limit ${limit})`
    : `call rate limit exceeded (${scope}, limit ${limit})`;
}
