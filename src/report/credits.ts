import type { ReportCharged } from '../ledger/index.js';

/**
 * Credits spent, from what the ledger knows. The service reports no charge per task (the
 * spec's task carries none) and the ledger keeps no balance readings, so the figure is the
 * tasks that ended SUCCESS (the only ones charged: FAIL and ERROR are refunded, a refused
 * create costs nothing) times each capability's cost per image, from the job's `credits`
 * or the spec (enhance and image2image: 1). Capabilities of unknown cost are named apart.
 */
export interface CreditsSpent {
  /** Credits for the tasks whose cost is known. */
  readonly known: number;
  /** Tasks charged whose cost per image is unknown, by capability. */
  readonly unknown: readonly ReportCharged[];
  readonly tasks: number;
  /** One sentence: where the figure comes from. */
  readonly source: string;
}

export function creditsSpent(
  charged: readonly ReportCharged[],
  costOf: (capability: string) => { credits: number; from: 'job' | 'spec' } | null,
): CreditsSpent {
  let known = 0;
  const unknown: ReportCharged[] = [];
  const from = new Set<string>();
  for (const c of charged) {
    const cost = costOf(c.capability);
    if (cost === null) unknown.push(c);
    else {
      known += cost.credits * c.tasks;
      from.add(cost.from === 'job' ? "the job's credits" : 'the spec');
    }
  }
  const tasks = charged.reduce((a, c) => a + c.tasks, 0);
  const costs = from.size ? `, at the cost per image of ${[...from].join(' and ')}` : '';
  const source =
    `Counted from the ledger: ${tasks} task${tasks === 1 ? '' : 's'} ended SUCCESS (the only ones charged; failed tasks are refunded)${costs}. ` +
    'The service reports no charge per task, and the ledger holds no balance readings; `darkroom credits` asks the service for the balance.' +
    (unknown.length ? ` No cost is known for ${unknown.map((u) => u.capability).join(', ')}: set it in the job's credits.` : '');
  return { known, unknown, tasks, source };
}
