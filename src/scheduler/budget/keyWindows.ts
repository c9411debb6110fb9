import { type KeyCache, createReserve, type KeyBudgetOptions } from './keyCache.js';
import { shareAfterRefusal, shareFromUsage } from './keyShare.js';
import { type Binding } from '../../errors.js';
import { MINUTE_MS } from '../../spec/window.js';

/**
 * A key's rolling call windows and pause, machine-wide: the CallBudget of the key's store
 * (keyCache.ts) read fresh before each answer, and what the service says of the key's
 * other clients (another machine) added to it as foreign calls.
 */
export class KeyWindows {
  constructor(
    private readonly cache: KeyCache,
    private readonly opts: KeyBudgetOptions,
  ) {}

  /** When the next call may leave (see CallBudget.availableAt), with what the store holds. */
  availableAt(now: number, create = false): number {
    this.cache.refresh(now);
    return this.cache.calls.availableAt(now, create);
  }

  hourHeadroom(now: number): number {
    this.cache.refresh(now);
    return this.cache.calls.hourHeadroom(now);
  }

  usage(now: number): { minute: number; hour: number } {
    this.cache.refresh(now);
    return this.cache.calls.usage(now);
  }

  /** Server feedback: no call before `untilMs`, for every process using the key. */
  pauseUntil(untilMs: number, now: number): void {
    this.cache.calls.pauseUntil(untilMs);
    this.cache.ownWrite(() => this.cache.store.pause(untilMs, now));
  }

  /** What holds the next call back, if anything does now. */
  binding(now: number, create: boolean): Binding | undefined {
    this.cache.refresh(now);
    const calls = this.cache.calls;
    const reserve = create ? 0 : createReserve(this.opts);
    const times: [Binding, number][] = [
      ['pause', calls.pausedUntilMs],
      ['hour', calls.hour.nextFreeAt(now, reserve)],
      ['minute', calls.minute.nextFreeAt(now, reserve)],
    ];
    let best: [Binding, number] | undefined;
    for (const t of times) if (t[1] > now && (!best || t[1] > best[1])) best = t;
    if (best) return best[0];
    return calls.availableAt(now, create) > now ? 'pace' : undefined;
  }

  /**
   * GET /usage: the service's own count of the key's calls. Calls it counts beyond ours
   * were made by other clients of the key (another machine): recorded as foreign calls at
   * now — the safe side, as they may be older — so every process here counts them. The
   * hour's surplus beyond the minute's counts in the hour window only. Figures are read
   * against the configured limits, the only ones known.
   *
   * Ours are counted as the service surely counted them: made within its own minute before
   * the reading (`sentAtMs`, when GET /usage left), not the wider window this machine keeps
   * for its margin, nor calls that left while the reading was on its way. Counted in the
   * wider window, a minute's first calls that the service had already forgotten hid as many
   * of the others' (5 calls of another machine were read as none, and its share became the
   * whole key: 7 calls in 50 ms at the window's reset).
   */
  adoptUsage(u: { minuteRemaining: number; hourRemaining: number }, now: number, sentAtMs = now): { minute: number; hour: number } {
    const cache = this.cache;
    return cache.store.immediate(() => {
      cache.refresh(now, true);
      const { callsPerMinute, callsPerHour } = this.opts.limits;
      const after = now - MINUTE_MS;
      const upTo = Math.min(now, sentAtMs);
      // Under a share already, the share is what keeps this machine to its part: the others'
      // calls of the last minute, put down at now, would shut the window for a minute more
      // after they were made (a machine whose partner had finished waited 40 s of each minute).
      const shared = cache.calls.shareAt(now) < 1;
      const ours = cache.calls.own.countBetween(now, after, upTo);
      const othersKnown = cache.calls.minute.count(now) - cache.calls.own.count(now);
      const minute = shared ? 0 : Math.max(0, callsPerMinute - u.minuteRemaining - ours - othersKnown);
      const hour = Math.max(0, callsPerHour - u.hourRemaining - cache.calls.hour.count(now) - minute);
      cache.addForeign(minute, now, 'both');
      cache.addForeign(hour, now, 'hour');
      // Others' calls of the last minute, as the service counts them, whatever this machine
      // had already put down to them: the share follows (keyShare.ts).
      const others = Math.max(0, callsPerMinute - u.minuteRemaining - ours);
      const share = shareFromUsage(cache.calls.shareState, others / callsPerMinute, now);
      if (share) cache.setShare(share);
      return { minute, hour };
    });
  }

  /**
   * A 429 on api_key_active_tasks that no slot row here explains (a create into a slot this
   * machine counted free, held and gone runs' rows included): another client of the key
   * holds tasks, so it spends the key's calls too. The share falls as on a window's 429
   * (keyShare.ts), before the window is found full: two machines that each spent their
   * windows whole met at every reset, 8 to 12 calls within 2 s.
   */
  adoptOthersTasks(now: number): void {
    const cache = this.cache;
    cache.store.immediate(() => {
      cache.refresh(now, true);
      this.shareFalls(cache.calls.ownSpent(now), now);
    });
  }

  /** Another client shows itself: the share falls from what this machine spent (keyShare.ts). Inside the store's transaction. */
  private shareFalls(spent: number, now: number): void {
    const share = shareAfterRefusal(this.cache.calls.shareState, spent, now);
    if (share) this.cache.setShare(share);
  }

  /**
   * A 429 on the key's minute or hour window while ours shows room: other clients fill it.
   * Foreign calls fill our window up to its limit, placed so they leave it when the
   * service said the window resets (RateLimit-Reset, else Retry-After, else a whole span
   * from now), and the machine's share of the key falls (keyShare.ts). The pause itself
   * goes through pauseUntil, as for any 429.
   */
  adoptRejection(scope: 'api_key_minute' | 'api_key_hour', resetAtMs: number | null, retryAfterMs: number | null, now: number): number {
    const cache = this.cache;
    const minute = scope === 'api_key_minute';
    const span = minute ? 60_000 : 3_600_000;
    const until = resetAtMs ?? (retryAfterMs !== null ? now + retryAfterMs : now + span);
    if (until <= now) return 0;
    return cache.store.immediate(() => {
      cache.refresh(now, true);
      const calls = cache.calls;
      const w = minute ? calls.minute : calls.hour;
      const n = Math.max(0, w.limit - w.count(now));
      if (n > 0) {
        // What this machine spent of the window that crowded: of the minute at its own rate,
        // and of the hour as that rate would spend it.
        const spent = calls.ownSpent(now) * (minute ? 1 : (calls.minute.limit * 60) / w.limit);
        this.shareFalls(spent, now);
      }
      cache.addForeign(n, Math.min(now, until - span), minute ? 'minute' : 'hour');
      return n;
    });
  }

  /**
   * Whether the service's own count was read lately (by any process here): a run started
   * again and again (a crash loop, a cron job) need not ask each time. Claims the
   * reading for `now` when it was not.
   */
  claimSeed(now: number, withinMs: number): boolean {
    const cache = this.cache;
    return cache.store.immediate(() => {
      const last = Number(cache.store.getMeta('seeded_ms') ?? Number.NaN);
      if (last <= now && now - last < withinMs) return false;
      cache.ownWrite(() => cache.store.setMeta('seeded_ms', String(now)));
      return true;
    });
  }
}
