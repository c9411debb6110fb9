import { describeSteps } from '../../config/steps.js';
import type { StepsChange } from '../../run/stepsCheck.js';

/**
 * The lines below `stopped: …` (run) or in `plan` that say what changed in the job's steps,
 * what a redo would send back to the first step, and what it costs.
 */
export function stepsChangeLines(c: StepsChange): string[] {
  const L: string[] = [];
  const done = c.outcome === 'redone';
  for (const o of c.others) {
    const where: string[] = [];
    if (o.done > 0) where.push(`${o.done} done${done ? '' : ' (their outputs stay until the new results replace them)'}`);
    if (o.inProgress > 0 && done)
      where.push(`${o.inProgress} in progress${o.running > 0 ? ` (${o.running} task(s) abandoned, already paid)` : ''}`);
    else if (o.inProgress > 0) {
      const extra = [
        o.running > 0 ? `${o.running} task(s) running, already paid, abandoned on a redo` : '',
        o.notDownloaded > 0 ? `${o.notDownloaded} result(s) paid and not yet downloaded, given up on a redo` : '',
      ].filter(Boolean);
      where.push(`${o.inProgress} in progress${extra.length ? ` (${extra.join('; ')})` : ''}`);
    }
    if (o.held > 0) where.push(`${o.held} held`);
    if (o.failed > 0) where.push(`${o.failed} failed (they stay failed; a retry runs them under the new steps)`);
    L.push(`steps    old: ${o.steps ? describeSteps(o.steps) : `unknown (list ${o.sig})`}: ${where.join(' · ')}`);
  }
  L.push(`steps    new: ${describeSteps(c.current.steps)}`);
  if (c.redo > 0) {
    const k = c.cost;
    const credits =
      k.credits !== null
        ? `${k.credits} credit(s)`
        : k.creditsKnown > 0
          ? `at least ${k.creditsKnown} credit(s) plus the unknown price of ${k.unknownFor.join(', ')}`
          : `credits unknown (no price for ${k.unknownFor.join(', ')}: set credits: in the job, or plan --cost)`;
    const verb = c.outcome === 'redone' ? 'redone' : 'a redo';
    L.push(`redo     ${verb}: ${c.redo} photo(s) from the first step: at least ${k.creates} create(s) and ${k.calls} call(s), ${credits}`);
  }
  return L;
}
