import { CAPABILITIES, isCapability } from '../spec/capabilities.js';
import type { Config } from '../config/index.js';
import { canonicalSteps, parseStepsJson, stepsJson, stepsSignature, type CanonicalStep } from '../config/steps.js';
import { blocking, type Applied, type Ledger, type OtherList, type StepsCensus } from '../ledger/index.js';
import type { Logger } from '../log.js';

/**
 * The job's step list checked against the ledger at the start of a run, before any call
 * photos started under other steps are never finished under these.
 * Without `--redo-steps` the run refuses, saying what a redo would send back and cost; with
 * it, those photos start again from the first step. See ledger/stepLists.ts for the rules.
 */

/** Another step list's started photos (the ledger's census), with the list itself read. */
export interface OtherSteps extends Omit<OtherList, 'stepsJson'> {
  /** The old list, when the ledger recorded it. */
  readonly steps: readonly CanonicalStep[] | null;
}

export interface RedoCost {
  /** One create per step per photo, at least (FAIL retries add more, refunded). */
  readonly creates: number;
  /** At least a create and a poll per step per photo (their uploads are used again). */
  readonly calls: number;
  /** Credits where every step's price is known (`--cost`, the job's `credits`, the spec), else null. */
  readonly credits: number | null;
  /** The part of the credits whose price is known. */
  readonly creditsKnown: number;
  /** Capabilities of the job's steps with no known price. */
  readonly unknownFor: readonly string[];
}

export interface StepsChange {
  readonly current: { readonly sig: string; readonly steps: readonly CanonicalStep[] };
  readonly others: readonly OtherSteps[];
  /** Photos a redo sends back to the first step: done, in progress and held under other steps. */
  readonly redo: number;
  /** Failed photos of other steps: bound to the job's steps (from the first) for a later retry, never redone by this. */
  readonly failed: number;
  readonly cost: RedoCost;
  /** refused: nothing written, the run stops (exit 2); redone: --redo-steps applied; bound: only failed photos were bound. */
  readonly outcome: 'refused' | 'redone' | 'bound' | 'plan';
  readonly applied?: Applied;
}

export interface StepsCheck {
  readonly proceed: boolean;
  /** Null when every started photo already follows the job's steps. */
  readonly change: StepsChange | null;
  /** The refusal's line, when proceed is false. */
  readonly message?: string;
}

/** Credits per image of a capability: `--cost` (plan), the job's `credits`, the spec's; null when none says. */
function creditsPerImage(capability: string, config: Config, costs?: Readonly<Record<string, number>>): number | null {
  const flag = costs?.[capability];
  if (flag !== undefined) return flag;
  const job = config.credits[capability];
  if (job !== undefined) return job;
  return isCapability(capability) ? CAPABILITIES[capability].credits : null;
}

/** What the census means for this job: the lists, the photos to redo and the price, as `plan` prices it. */
export function describeChange(
  census: StepsCensus,
  config: Config,
  oldSteps: (sig: string, json: string | null) => readonly CanonicalStep[] | null,
  costs?: Readonly<Record<string, number>>,
): StepsChange | null {
  if (census.others.length === 0) return null;
  const others = census.others.map((o) => ({
    sig: o.sig,
    steps: oldSteps(o.sig, o.stepsJson),
    done: o.done,
    inProgress: o.inProgress,
    running: o.running,
    notDownloaded: o.notDownloaded,
    held: o.held,
    failed: o.failed,
  }));
  const redo = census.others.reduce((n, o) => n + blocking(o), 0);
  const failed = census.others.reduce((n, o) => n + o.failed, 0);
  const prices = config.steps.map((s) => creditsPerImage(s.capability, config, costs));
  const unknownFor = [...new Set(config.steps.filter((_, i) => prices[i] === null).map((s) => s.capability))];
  const creditsKnown = prices.reduce<number>((sum, p) => sum + (p ?? 0) * redo, 0);
  const creates = redo * config.steps.length;
  return {
    current: { sig: census.current, steps: canonicalSteps(config.steps) },
    others,
    redo,
    failed,
    cost: { creates, calls: 2 * creates, credits: unknownFor.length > 0 && redo > 0 ? null : creditsKnown, creditsKnown, unknownFor },
    outcome: 'plan',
  };
}

/** The refusal, in one line: what happened, that nothing was spent, and the two ways on. */
function refusalLine(change: StepsChange): string {
  const parts: string[] = [];
  const sum = (k: 'done' | 'inProgress' | 'held') => change.others.reduce((n, o) => n + o[k], 0);
  if (sum('done') > 0) parts.push(`${sum('done')} done`);
  if (sum('inProgress') > 0) parts.push(`${sum('inProgress')} in progress`);
  if (sum('held') > 0) parts.push(`${sum('held')} held`);
  return (
    `the job's steps changed: ${change.redo} photo(s) were started under other steps (${parts.join(', ')}) and would mix with these; nothing was sent. ` +
    `Put the old steps back to finish them under those, or run again with --redo-steps to redo them from the first step under the new steps`
  );
}

export interface CheckOptions {
  /** `--redo-steps`: the operator accepts redoing (and paying again for) photos started under other steps. */
  readonly redo: boolean;
  readonly keyFps: readonly string[];
  readonly log: Logger;
}

/**
 * The check itself: refuse (nothing written) or bind every photo to the job's steps. Called
 * by the runner after recovery and before discovery, the onAmbiguous requeue and any call.
 */
export function checkSteps(config: Config, ledger: Ledger, opts: CheckOptions): StepsCheck {
  const sig = stepsSignature(config.steps);
  const jobCaps = config.steps.map((s) => s.capability);
  const census = ledger.steps.census(sig, jobCaps);
  const change = describeChange(census, config, (_, json) => (json === null ? null : parseStepsJson(json)));
  if (change && change.redo > 0 && !opts.redo) {
    const message = refusalLine(change);
    // Info, not error: the CLI prints the line itself as the run's `stopped:` (once).
    opts.log.info({ redo: change.redo, failed: change.failed, creates: change.cost.creates }, message);
    return { proceed: false, change: { ...change, outcome: 'refused' }, message };
  }
  const applied = ledger.steps.apply(sig, { stepsJson: stepsJson(config.steps), jobCaps, redo: opts.redo, keyFps: opts.keyFps });
  if (!change) return { proceed: true, change: null };
  if (applied.redone > 0) {
    opts.log.warn(
      {
        redone: applied.redone,
        abandoned: applied.abandoned,
        rebound: applied.rebound,
        creates: change.cost.creates,
        credits: change.cost.credits,
      },
      `steps changed (--redo-steps): ${applied.redone} photo(s) redone from the first step under the new steps (at least ${change.cost.creates} create(s)` +
        `${change.cost.credits !== null ? `, ${change.cost.credits} credit(s)` : ''}); ${applied.abandoned} task(s) running under the old steps abandoned, already paid`,
    );
  }
  if (applied.rebound > 0) {
    opts.log.info(
      { rebound: applied.rebound },
      `${applied.rebound} failed photo(s) of other steps bound to the new steps: a retry runs them from the first step`,
    );
  }
  return { proceed: true, change: { ...change, outcome: applied.redone > 0 ? 'redone' : 'bound', applied } };
}

/** After discovery: photos found by this run follow the job's steps from the first. */
export function stampNewPhotos(config: Config, ledger: Ledger): number {
  return ledger.steps.stampUnsigned(stepsSignature(config.steps));
}
