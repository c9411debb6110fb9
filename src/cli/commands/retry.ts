import { shownText } from '../../display.js';
import { DEFAULT_LEDGER_FILE, loadConfig, resolveLedgerPath } from '../../config/index.js';
import type { HeldItem } from '../../ledger/index.js';
import { readRetryable, requeueHeld } from '../../lib/retry.js';
import { retryFailedCommand } from './retryFailed.js';
import { retryRejectedCommand } from './retryRejected.js';
import type { RetryArgs, RetryIo, RetryOutcome } from './retryTypes.js';
import { EXIT } from '../../errors.js';

/**
 * `darkroom retry --held`: put held photos back to work, after saying plainly that a
 * create whose outcome was unknown may already have been charged, so sending it again can
 * charge a second time (L2). Without a terminal to ask on and without `--yes` it refuses
 * (exit 2): an unattended script must say yes explicitly.
 */
export async function retryCommand(args: RetryArgs, io: RetryIo): Promise<RetryOutcome> {
  if ([args.held, Boolean(args.failed), Boolean(args.rejected)].filter(Boolean).length !== 1) {
    return { exitCode: EXIT.usage, stdout: '', stderr: 'darkroom: name what to retry: --held, --failed or --rejected (one at a time)' };
  }
  if (args.mode !== undefined && !args.rejected) {
    return {
      exitCode: EXIT.usage,
      stdout: '',
      stderr: 'darkroom: --mode goes with --rejected (the mode the rejected photos are made with again)',
    };
  }
  if (args.failed) return retryFailedCommand(args, io);
  if (args.rejected) return retryRejectedCommand(args, io);
  const config = args.jobs ? loadConfig(args.jobs, { ledger: args.ledger, env: io.env }) : null;
  const file = config ? config.ledger : resolveLedgerPath(process.cwd(), args.ledger ?? DEFAULT_LEDGER_FILE);
  const { held } = readRetryable(file);
  if (held.length === 0) return { exitCode: EXIT.ok, stdout: `nothing is held in ${file}`, stderr: '' };

  const warning = describeHeld(held);
  if (!args.yes) {
    if (!io.interactive) {
      return {
        exitCode: EXIT.usage,
        stdout: '',
        stderr:
          `${warning}\n` +
          `darkroom: retry --held needs a yes, and there is no terminal to ask on: run it in a terminal, or add --yes to accept that a second charge is possible`,
      };
    }
    const yes = await io.ask(`${warning}\nRe-queue ${held.length} held photo(s)? [y/N] `);
    if (!yes) return { exitCode: EXIT.ok, stdout: 'nothing changed: the held photos stay held', stderr: '' };
  }

  const r = requeueHeld(file, held, { env: io.env, breakLock: args.breakLock, allowNetworkFs: config?.allowNetworkFs ?? false });
  const parts = [];
  if (r.recreated > 0) parts.push(`${r.recreated} to be created again (a second charge is possible)`);
  if (r.repolled > 0) parts.push(`${r.repolled} to be polled again (no new create unless the task is gone or fails)`);
  const again = args.jobs ? `darkroom run ${args.jobs}` : 'darkroom run <jobs.yaml>';
  return {
    exitCode: EXIT.ok,
    stdout: `re-queued ${r.recreated + r.repolled} photo(s): ${parts.join('; ')}. Run \`${again}\` to continue.`,
    stderr: [args.yes ? warning : '', r.note ?? ''].filter(Boolean).join('\n'),
  };
}

/** What is held and why, with the ids to quote to support, and what a retry may cost. */
function describeHeld(held: readonly HeldItem[]): string {
  const ambiguous = held.filter((h) => h.kind === 'ambiguous').length;
  const timedOut = held.length - ambiguous;
  const lines = [`${held.length} photo(s) held:`];
  for (const h of held) {
    const ids = [
      h.sentRequestId ? `X-Request-Id ${h.sentRequestId}` : '',
      h.requestId ? `requestId ${h.requestId}` : '',
      h.taskId ? `task ${h.taskId}` : '',
    ]
      .filter(Boolean)
      .join(', ');
    lines.push(
      `  ${shownText(h.path)}  step ${h.step + 1}, ${h.kind === 'ambiguous' ? 'create outcome unknown' : 'timed out'}${ids ? ` [${ids}]` : ''}`,
    );
  }
  if (ambiguous > 0) {
    lines.push(
      `warning: ${ambiguous} of them were creates whose answer never arrived: the service may have made the task and will charge for it. ` +
        'Creating them again can charge a second time (quote the ids above to support to check first).',
    );
  }
  if (timedOut > 0)
    lines.push(`${timedOut} timed out while polling: their tasks are polled again, and created anew only if gone or failed.`);
  return lines.join('\n');
}
