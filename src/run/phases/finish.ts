import { clock } from '../../clock.js';
import type { RunContext, RunResult } from '../context.js';
import type { CreditsShortfall } from '../credits.js';
import { summaryEvent } from '../events.js';
import type { Guards } from '../guards.js';
import type { Discovered } from './discover.js';
import type { Prepared } from './prepare.js';
import { EXIT } from '../../errors.js';

/** The result before its summary event: what `ended` adds the summary and rescue to. */
type Figures = Omit<RunResult, 'summary' | 'rescue'>;

/**
 * The last phase: a bug met on the way is rethrown now that everything has stopped; else
 * the photo events left are sent, the ledger's figures read, and the exit code worked out
 * from them and the run's stops (RunControl.outcome); the summary event goes last.
 */
export function finish(
  p: Prepared,
  discovered: Discovered,
  guards: Guards | undefined,
  credits: CreditsShortfall | undefined,
  tempFilesSwept: number,
): RunResult {
  const { ctx } = p;
  const { control, ledger } = ctx;
  const crash = control.crash;
  if (crash) throw crash.err;
  ctx.events.pull();
  const status = ledger.status();
  const interrupted = ctx.request.signal?.aborted ?? false;
  const outcome = control.outcome(status, interrupted, ctx.request.follow === true);
  const { exitCode } = outcome;
  // A limit says at the end what became of the photos it let start (Guards.endMessage).
  const halt = outcome.halt?.kind === 'limit' ? { ...outcome.halt, message: guards?.endMessage() ?? outcome.halt.message } : outcome.halt;
  ctx.log.info(
    {
      exitCode,
      guard: halt?.kind === 'limit' ? guards?.trip?.guard : undefined,
      done: status.done,
      failed: status.failed,
      held: status.held,
      pending: status.pending,
      paidNotDownloaded: status.paidNotDownloaded,
    },
    'run ended',
  );
  return ended(ctx, {
    status,
    discovered,
    recovered: p.recovered,
    tempFilesSwept,
    accountStop: control.accountStop,
    halt,
    ...(credits ? { credits } : {}),
    ...(p.steps.change ? { stepsChange: p.steps.change } : {}),
    interrupted,
    ...(halt?.kind === 'limit' && guards?.trip ? { guard: guards.trip } : {}),
    ...(guards?.limits.maxCredits !== undefined ? { creditsSpent: guards.creditsSpent() } : {}),
    exitCode,
  });
}

/** The run refused before any call: the job's steps changed under started photos (exit 2). */
export function refuse(p: Prepared, tempFilesSwept: number): RunResult {
  const { ctx, steps } = p;
  return ended(ctx, {
    status: ctx.ledger.status(),
    discovered: { added: 0, known: 0, skipped: 0, hidden: 0, gone: 0 },
    recovered: p.recovered,
    tempFilesSwept,
    accountStop: undefined,
    halt: { kind: 'config', message: steps.message ?? "the job's steps changed", exitCode: EXIT.usage, immediate: true },
    ...(steps.change ? { stepsChange: steps.change } : {}),
    interrupted: false,
    exitCode: EXIT.usage,
  });
}

/** The run's end: its summary event sent, its figures and (a deleted ledger's) rescue added to the result. */
function ended(ctx: RunContext, r: Figures): RunResult {
  const event = summaryEvent(r.status, r.exitCode, stoppedBy(r), r.creditsSpent ?? null, clock.now());
  const { type: _, ...figures } = event;
  const rescue = r.halt?.kind === 'ledger' ? ctx.ledger.rescueIfDeleted() : null;
  ctx.events.summary(event);
  return { ...r, summary: { ...figures, interrupted: ctx.request.signal?.aborted ?? false }, rescue };
}

/** Why the run stopped early, for the summary event; null when it ran to its end. */
function stoppedBy(r: Figures): { kind: string; message: string } | null {
  if (r.interrupted) return { kind: 'interrupted', message: 'interrupted: run again to continue where this one stopped' };
  if (r.halt) return { kind: r.halt.kind, message: r.halt.message };
  if (r.accountStop) return { kind: 'account', message: r.accountStop.error.message };
  return null;
}
