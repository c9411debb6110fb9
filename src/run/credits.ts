import type { ApiClient } from '../api/index.js';
import type { Config } from '../config/index.js';
import type { Ledger } from '../ledger/index.js';
import type { Logger } from '../log.js';
import type { KeyBudget } from '../scheduler/budget/keyBudget.js';

/** 20601: what the account has against what the work left needs. */
export interface CreditsShortfall {
  /** Creates still needed to finish every pending photo (one per remaining step). */
  readonly needed: number;
  /** remainingCredit from GET /api/v1/credits, or null when that call failed. */
  readonly remaining: number | null;
}

/**
 * 20601 stopped the creates: one GET /api/v1/credits (within the key's call budget) so
 * the operator reads how many credits the rest needs against what the account has.
 */
export async function creditsShortfall(
  ledger: Ledger,
  config: Config,
  client: ApiClient | undefined,
  budget: KeyBudget | undefined,
  abort: AbortSignal,
  log: Logger,
): Promise<CreditsShortfall> {
  const needed = ledger.createsNeeded(config.steps.length);
  if (!client || !budget) return { needed, remaining: null };
  try {
    const c = await budget.call('account', { signal: abort }, (ticket) => client.withTicket(ticket).credits({ signal: abort }));
    return { needed, remaining: c.remainingCredit };
  } catch (err) {
    log.warn({ err: String((err as Error).message ?? err) }, 'could not read the credit balance');
    return { needed, remaining: null };
  }
}

/** The account's usedCredit for the credit guard: one GET /api/v1/credits within the key's call budget; null if it failed. */
export async function readUsedCredit(
  client: ApiClient | undefined,
  budget: KeyBudget | undefined,
  abort: AbortSignal,
  log: Logger,
): Promise<number | null> {
  if (!client || !budget) return null;
  try {
    return (await budget.call('account', { signal: abort }, (ticket) => client.withTicket(ticket).credits({ signal: abort }))).usedCredit;
  } catch (err) {
    log.warn(
      { err: String((err as Error).message ?? err) },
      "could not read the credit balance for --max-credits; counting this run's creates instead",
    );
    return null;
  }
}
