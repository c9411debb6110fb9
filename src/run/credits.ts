import type { ApiClient } from '../api/index.js';
import type { Config } from '../config/index.js';
import type { Ledger } from '../ledger/index.js';
import type { Logger } from '../log.js';
import type { KeyBudget, Reservation } from '../scheduler/budget/keyBudget.js';

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
  let ticket: Reservation | undefined;
  try {
    ticket = await budget.reserveWhenFree('account', { signal: abort });
    const c = await client.withTicket(ticket).credits({ signal: abort });
    return { needed, remaining: c.remainingCredit };
  } catch (err) {
    log.warn({ err: String((err as Error).message ?? err) }, 'could not read the credit balance');
    return { needed, remaining: null };
  } finally {
    if (ticket) budget.settle(ticket);
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
  let ticket: Reservation | undefined;
  try {
    ticket = await budget.reserveWhenFree('account', { signal: abort });
    return (await client.withTicket(ticket).credits({ signal: abort })).usedCredit;
  } catch (err) {
    log.warn(
      { err: String((err as Error).message ?? err) },
      "could not read the credit balance for --max-credits; counting this run's creates instead",
    );
    return null;
  } finally {
    if (ticket) budget.settle(ticket);
  }
}
