// From their modules, not the index files: the api index brings undici with it.
import { shownText } from '../../display.js';
import { CAPABILITIES, isCapability } from '../../spec/capabilities.js';
import { DEFAULT_LEDGER_FILE, loadConfig, resolveLedgerPath } from '../../config/index.js';
import type { FailedItem } from '../../ledger/index.js';
import { readRetryable, requeueFailed } from '../../lib/retry.js';
import type { RetryArgs, RetryIo, RetryOutcome } from './retryTypes.js';
import { EXIT } from '../../errors.js';

/** What re-creating the failed photos costs, as far as it is known. */
export interface RetryCost {
  /** Tasks to create: one per step from where each photo starts again (FAIL retries may add more). */
  readonly creates: number;
  /** Credits if every task succeeds (failed tasks are refunded); null when a capability's price is unknown. */
  readonly credits: number | null;
  /** Capabilities with no known price (the spec prices only enhance and image2image; the jobs file's `credits:` the rest). */
  readonly unpriced: readonly string[];
}

/** Credits per image of a capability: the jobs file's `credits:`, else the spec's, else unknown (as `darkroom plan`). */
function creditsOf(capability: string, configured: Readonly<Partial<Record<string, number>>>): number | null {
  return configured[capability] ?? (isCapability(capability) ? CAPABILITIES[capability].credits : null);
}

export function retryCost(
  items: readonly FailedItem[],
  steps: readonly string[] | null,
  configured: Readonly<Partial<Record<string, number>>>,
): RetryCost {
  let creates = 0;
  let credits = 0;
  const unpriced = new Set<string>();
  for (const f of items) {
    if (f.kind !== 'create') continue;
    const last = steps ? steps.length : f.fromStep + 1;
    for (let s = f.fromStep; s < Math.max(last, f.fromStep + 1); s++) {
      creates++;
      const cap = steps?.[s];
      const c = cap === undefined ? null : creditsOf(cap, configured);
      if (c === null) unpriced.add(cap ?? `step ${s + 1}`);
      else credits += c;
    }
  }
  return { creates, credits: unpriced.size > 0 ? null : credits, unpriced: [...unpriced] };
}

/**
 * `darkroom retry --failed`: put failed photos back to work after saying what it costs.
 * A photo whose task succeeded (paid) and only its download failed goes back to be
 * downloaded, at no cost, without asking; the others are created again, which costs
 * credits, so it asks first (or takes `--yes`; without a terminal and without `--yes` it
 * refuses, exit 2). Skipped inputs (bad files) are left alone, and it says so.
 */
export async function retryFailedCommand(args: RetryArgs, io: RetryIo): Promise<RetryOutcome> {
  const config = args.jobs ? loadConfig(args.jobs, { ledger: args.ledger, env: io.env }) : null;
  const file = config?.ledger ?? resolveLedgerPath(process.cwd(), args.ledger ?? DEFAULT_LEDGER_FILE);
  const found = readRetryable(file);
  const { failed, skipped } = found;
  const steps = config ? config.steps.map((s) => s.capability) : pipelineOf(found.pipeline);
  const skippedNote =
    skipped > 0
      ? `${skipped} skipped input(s) are not retried by this: they are bad files (see \`darkroom status\`); replace or fix a file and the next run picks it up.`
      : '';
  if (failed.length === 0) {
    return { exitCode: EXIT.ok, stdout: [`nothing has failed in ${file}`, skippedNote].filter(Boolean).join('\n'), stderr: '' };
  }
  const cost = retryCost(failed, steps, config?.credits ?? {});
  const description = describeFailed(failed, steps, cost, skippedNote);
  const recreate = failed.filter((f) => f.kind === 'create').length;
  if (recreate > 0 && !args.yes) {
    if (!io.interactive) {
      return {
        exitCode: EXIT.usage,
        stdout: '',
        stderr: `${description}\ndarkroom: retry --failed needs a yes, and there is no terminal to ask on: run it in a terminal, or add --yes to accept the cost above`,
      };
    }
    const yes = await io.ask(`${description}\nRe-queue ${failed.length} failed photo(s)? [y/N] `);
    if (!yes) return { exitCode: EXIT.ok, stdout: 'nothing changed: the failed photos stay failed', stderr: '' };
  }

  const r = requeueFailed(file, failed, { breakLock: args.breakLock, allowNetworkFs: config?.allowNetworkFs ?? false });
  const parts = [];
  if (r.downloads > 0) parts.push(`${r.downloads} to be downloaded (paid already, no cost)`);
  if (r.recreated > 0) parts.push(`${r.recreated} to be created again (${costWords(cost)})`);
  const again = args.jobs ? `darkroom run ${args.jobs}` : 'darkroom run <jobs.yaml>';
  return {
    exitCode: EXIT.ok,
    stdout: `re-queued ${r.downloads + r.recreated} photo(s): ${parts.join('; ')}. Run \`${again}\` to continue.`,
    stderr: args.yes || recreate === 0 ? description : '',
  };
}

/** What has failed and why, what a retry does with each, and what it costs. */
function describeFailed(failed: readonly FailedItem[], steps: readonly string[] | null, cost: RetryCost, skippedNote: string): string {
  const lines = [`${failed.length} photo(s) failed:`];
  for (const f of failed) {
    const cap = steps?.[f.step];
    lines.push(`  ${shownText(f.path)}  step ${f.step + 1}${cap ? ` (${cap})` : ''}: ${shownText(f.reason ?? 'no reason recorded')}`);
  }
  const downloads = failed.filter((f) => f.kind === 'download').length;
  const recreate = failed.length - downloads;
  if (downloads > 0) {
    lines.push(
      `${downloads} of them only need their download: the task succeeded and was paid for; they go back to be downloaded, at no cost ` +
        '(should the service no longer know a task, it is created once more, as for any vanished task).',
    );
  }
  if (recreate > 0) {
    lines.push(
      `${recreate} of them will be created again: ${cost.creates} create(s), ${costWords(cost)}. ` +
        'Credits are charged only for tasks that succeed (FAIL and ERROR are refunded).',
    );
  }
  if (skippedNote) lines.push(skippedNote);
  return lines.join('\n');
}

export function costWords(cost: RetryCost): string {
  if (cost.credits !== null) return `${cost.credits} credit(s)`;
  return `credits unknown: no price for ${cost.unpriced.join(', ')} (set \`credits:\` in the jobs file, as \`darkroom plan\` reads it)`;
}

function pipelineOf(meta: string | undefined): string[] | null {
  try {
    const v: unknown = meta ? JSON.parse(meta) : null;
    return Array.isArray(v) ? v.map(String) : null;
  } catch {
    return null;
  }
}
