import { shownText } from '../../display.js';
import { loadConfig } from '../../config/index.js';
import { readRejected, requeueRejected, stepsWithMode } from '../../lib/retryRejected.js';
import { costWords, retryCost, type RetryCost } from './retryFailed.js';
import type { RetryArgs, RetryIo, RetryOutcome } from './retryTypes.js';
import { EXIT, UsageError } from '../../errors.js';

/**
 * `darkroom retry --rejected`: the photos a person rejected in `darkroom review`, made again
 * with the job's steps (or `--mode M` where a step takes a mode), after saying what that costs
 * in creates and credits and asking, as `retry --failed` does. Each rejected output is kept
 * aside (it was paid for) as `<name>.rejected-<hash>.<ext>`; the redone photo comes back to
 * the review as not yet reviewed. Needs the jobs file: its steps are what is run again.
 */
export async function retryRejectedCommand(args: RetryArgs, io: RetryIo): Promise<RetryOutcome> {
  if (!args.jobs) throw new UsageError('retry --rejected needs the jobs file: its steps are what the rejected photos are made with again');
  const config = loadConfig(args.jobs, { ledger: args.ledger, env: io.env });
  const file = config.ledger;
  const steps = stepsWithMode(config.steps, args.mode);
  const rejected = readRejected(file);
  if (rejected.length === 0) return { exitCode: EXIT.ok, stdout: `nothing is rejected in ${file}`, stderr: '' };
  const cost = retryCost(
    rejected.map((r) => ({ id: r.id, path: r.path, step: 0, reason: r.reason, kind: 'create' as const, fromStep: 0 })),
    steps.map((s) => s.capability),
    config.credits ?? {},
  );
  const description = describeRejected(rejected, steps, cost);
  if (!args.yes) {
    if (!io.interactive) {
      return {
        exitCode: EXIT.usage,
        stdout: '',
        stderr: `${description}\ndarkroom: retry --rejected needs a yes, and there is no terminal to ask on: run it in a terminal, or add --yes to accept the cost above`,
      };
    }
    const yes = await io.ask(`${description}\nMake ${rejected.length} rejected photo(s) again? [y/N] `);
    if (!yes) return { exitCode: EXIT.ok, stdout: 'nothing changed: the rejected photos stay as they are', stderr: '' };
  }
  const r = await requeueRejected(file, rejected, { mode: args.mode, breakLock: args.breakLock, allowNetworkFs: config.allowNetworkFs });
  const lines = [
    `re-queued ${r.redone} rejected photo(s) to be made again (${costWords(cost)}); ${r.kept.length} rejected output(s) kept aside as *.rejected-*. Run \`darkroom run ${args.jobs}\` to continue, then \`darkroom review ${args.jobs}\`.`,
  ];
  if (r.changed > 0) lines.push(`${r.changed} photo(s) were accepted or cleared on the review page meanwhile: left as they are.`);
  return { exitCode: EXIT.ok, stdout: lines.join('\n'), stderr: args.yes ? description : '' };
}

function describeRejected(
  rejected: readonly { path: string; reason: string | null }[],
  steps: readonly { capability: string; mode?: string | undefined }[],
  cost: RetryCost,
): string {
  const lines = [`${rejected.length} photo(s) rejected in review:`];
  for (const r of rejected) lines.push(`  ${shownText(r.path)}${r.reason ? `: ${shownText(r.reason)}` : ''}`);
  const how = steps.map((s) => (s.mode ? `${s.capability} (mode ${s.mode})` : s.capability)).join(' → ');
  lines.push(
    `They will be made again with ${how}: ${cost.creates} create(s), ${costWords(cost)}. ` +
      'Each rejected output is kept aside (it was paid for) as <name>.rejected-<hash>.<ext>; the new output takes its name once done.',
  );
  return lines.join('\n');
}
