/**
 * The account behind every key: its credits and its subscription. Decisions:
 * - All keys belong to one account: credits and subscription are shared.
 * - Every capability costs 1 credit per task. A create needs the remaining credits minus
 *   those held by unfinished tasks; the balance drops only when a task succeeds, booked
 *   when the task leaves its slot (settle).
 */
import type { Limits } from './limits.js';

/** Creates are 1 credit each, whatever the capability (spec: other costs "not shown"). */
export const TASK_COST = 1;
export const USER_ID = 'sim-account-1';

export class Account {
  private usedCredits = 0;

  constructor(
    private readonly cfg: { credits: number; subscribed: boolean },
    private readonly limits: Limits,
  ) {}

  get subscribed(): boolean {
    return this.cfg.subscribed;
  }

  /** Drops tasks that have finished by `now` from the slot lists and books their credits. */
  settle(now: number): void {
    this.limits.release(now, (t) => {
      if (t.outcome === 'SUCCESS') this.usedCredits += t.cost;
    });
  }

  /** What a create may spend: the balance less the credits unfinished tasks hold. */
  availableCredits(): number {
    let held = 0;
    for (const t of this.limits.active()) held += t.cost;
    return this.cfg.credits - this.usedCredits - held;
  }

  /** The credits endpoint's answer. */
  credits(): { totalCredit: number; usedCredit: number; remainingCredit: number } {
    return {
      totalCredit: this.cfg.credits,
      usedCredit: this.usedCredits,
      remainingCredit: this.cfg.credits - this.usedCredits,
    };
  }
}
