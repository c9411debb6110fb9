import { isApiError } from '../api/index.js';
import type { ApiError } from '../errors.js';
import { clock } from '../clock.js';
import { KeyStore } from '../keystore/store.js';
import { ARRIVAL_MARGIN_MS } from '../scheduler/budget/callBudget.js';
import { KeyBudget } from '../scheduler/budget/keyBudget.js';
import { taskBoundMs } from '../scheduler/budget/keySlots.js';
import { retryAt } from '../scheduler/budget/backoff.js';
import type { KeyContext, RunContext } from './context.js';

export interface KeyBudgets {
  /** By key fingerprint. */
  readonly byKey: ReadonlyMap<string, KeyBudget>;
  /** The network file systems stores were opened on (ledger.allowNetworkFs), for a warning. */
  readonly networkFs: readonly string[];
  /** Closes the stores this opened (not the caller's). */
  close(): void;
}

/**
 * The task bound moves slowly with the latencies observed: read from the ledger at most
 * once a minute, or every 5 s while held creates wait on it (a first guess of 10 min
 * shrinks as soon as tasks are seen to end).
 */
const BOUND_REFRESH_MS = 60_000;
const FRESH_BOUND_REFRESH_MS = 5_000;

/**
 * Each key's budget for this run, its own rows in the key's store made what the ledger
 * says (a killed or stopped run before left them stale): running tasks, held creates and
 * orphan tasks as slots, the ledger's recent calls the store lacks, its pause.
 */
export function openKeyBudgets(ctx: RunContext, now = clock.now()): KeyBudgets {
  const { ledger, config, keys } = ctx;
  const { stateDir, seams } = ctx.request;
  const owner = ledger.keyFacts.ownerId();
  const pollCapMs = config.limits.pollCapMinutes * 60_000;
  let bound = { at: Number.NEGATIVE_INFINITY, ms: 0 };
  const boundMs = (fresh = false) => {
    const t = clock.now();
    const age = t - bound.at;
    if (age < 0 || age >= (fresh ? FRESH_BOUND_REFRESH_MS : BOUND_REFRESH_MS))
      bound = { at: t, ms: taskBoundMs(ledger.keyFacts.longestRecentLatencyMs(), pollCapMs) };
    return bound.ms;
  };
  const opened: KeyStore[] = [];
  const byKey = new Map<string, KeyBudget>();
  const close = () => {
    for (const s of opened) s.close();
  };
  try {
    for (const k of keys) {
      const fp = k.fingerprint;
      if (byKey.has(fp)) continue;
      let store = seams?.keyStores?.get(fp);
      if (!store) {
        store =
          stateDir !== undefined ? KeyStore.openFor(stateDir, fp, { allowNetworkFs: config.allowNetworkFs }) : KeyStore.open(':memory:');
        opened.push(store);
      }
      const budget = new KeyBudget(store, { owner, limits: config.limits, taskBoundMs: boundMs, callTimeoutMs: config.timeoutMs }, now);
      budget.reconcile(
        {
          slots: ledger.keyFacts.slotsOf(fp, now, boundMs(), config.timeoutMs),
          calls: ledger.keyFacts.callsSince(fp, now - 3_600_000 - ARRIVAL_MARGIN_MS),
          pausedUntil: ledger.calls.pausedUntil(fp),
        },
        now,
      );
      byKey.set(fp, budget);
    }
  } catch (err) {
    close();
    throw err;
  }
  const networkFs = [...new Set(opened.flatMap((s) => (s.networkFs === null ? [] : [s.networkFs])))];
  return { byKey, networkFs, close };
}

const SEED_EVERY_MS = 60_000;

/**
 * Across machines the service is the truth: before the first call of a run that has work
 * needing calls, one GET /api/v1/usage (a call like any other, reserved in the budget)
 * says what the key spent that this machine did not see, and the difference is recorded
 * as other clients' calls. It is a help, not a need: if it fails, the run goes on and the
 * service's 429s and RateLimit headers correct the windows as they come; but an account
 * problem (401, 24403) is returned, for the run to stop on as at any call.
 */
export async function seedFromUsage(key: KeyContext, signal: AbortSignal): Promise<ApiError | undefined> {
  const { budget, client, log } = key;
  // Once a minute at most per key on this machine: a run restarted again and again (a
  // crash loop, a cron job every minute) would otherwise spend a call of the minute's
  // budget on each start, for facts that change little in a minute.
  if (!budget.claimSeed(clock.now(), SEED_EVERY_MS)) return undefined;
  try {
    await budget.call('account', { signal }, async (ticket) => {
      const askedAt = clock.now();
      const u = await client.withTicket(ticket).usage({ signal });
      const foreign = budget.adoptUsage(u, clock.now(), askedAt);
      if (foreign.minute + foreign.hour > 0) {
        log.info(
          { ...foreign, minuteRemaining: u.minuteRemaining, hourRemaining: u.hourRemaining },
          'the key was used elsewhere: its windows count those calls too',
        );
      }
    });
  } catch (err) {
    // Stopped while it waited for room (the run ended, an interrupt): nothing to say.
    if (signal.aborted) return undefined;
    // An invalid key, an account problem or a redirecting base URL stops the run here, as at any other call.
    if (isApiError(err) && (err.kind === 'stop-account' || err.kind === 'stop-config')) return err;
    if (isApiError(err) && err.kind === 'retry-later') budget.pauseUntil(retryAt(err, 0, key.random));
    log.warn(
      { err: String((err as Error)?.message ?? err) },
      "could not read the key's usage from the service; going on with this machine's count",
    );
  }
  return undefined;
}

/** While a key is shared, how often to look whether its usage is due again (seedFromUsage reads it once a minute). */
const SHARE_LOOK_MS = 15_000;

/**
 * While this machine spends under a share of the key (scheduler/budget/keyShare.ts: other clients
 * use it too), GET /usage once a minute, machine-wide (seedFromUsage), says what the others
 * still spend: when they spent nothing in the last minute, the whole key is this machine's
 * again at once, not after minutes of additive growth. A call each, only while shared and
 * while the key has work needing calls. Ends when `signal` aborts; an account or config
 * problem stops the run.
 */
export async function watchShare(key: KeyContext, signal: AbortSignal): Promise<void> {
  for (;;) {
    try {
      await clock.sleep(SHARE_LOOK_MS, signal);
    } catch {
      return;
    }
    const now = clock.now();
    if (key.budget.windowsAt(now).shareAt(now) >= 1 || key.control.stopped || !key.ledger.keyFacts.needsCalls(key.keyFp)) continue;
    const stop = await seedFromUsage(key, signal);
    if (stop) key.control.stopFor(stop);
  }
}
