import { isApiError } from '../../api/index.js';
import type { ApiError } from '../../errors.js';
import { clock } from '../../clock.js';
import { crashPoint, type ItemRow } from '../../ledger/index.js';
import { retryAt } from '../../scheduler/budget/backoff.js';
import type { Feedback } from '../../scheduler/lane/types.js';
import type { KeyContext } from '../context.js';

/**
 * One poll of an active task. SUCCESS moves on (next step or download); FAIL is created
 * again up to maxAttempts (the spec: safe to retry, refunded); ERROR and OTHER fail the
 * item; past the polling cap the task is held as timed out (it may still finish).
 */
export async function pollStage(ctx: KeyContext, item: ItemRow): Promise<Feedback> {
  const { ledger, config } = ctx;
  const step = config.steps[item.step_index]!;
  const started = item.task_started_ms ?? clock.now();
  try {
    const t = await ctx.client.task(item.business_type!, item.task_id!, { signal: ctx.control.abort });
    crashPoint('poll');
    const now = clock.now();
    const elapsed = now - started;
    // The task ended somewhere between the last poll that saw it running and this one:
    // learning from `elapsed` alone would teach the poller its own delays.
    const lastRunning = ledger.tasks.lastSeenRunning(item) ?? started;
    const hint = ledger.tasks.waitHintOfCurrent(item);
    // A poll for a fresh result URL (the last one expired) finds a task long finished: its
    // elapsed time says nothing about latency.
    const refreshing = ledger.outputs.urlRefreshes(item) > 0;
    const learn = () => {
      if (!refreshing) ctx.polling.latency.observe(step.capability, hint, lastRunning - started, elapsed);
    };
    switch (t.status) {
      case 'SUCCESS': {
        if (!t.generateUrl) return keepPolling(ctx, item, 'SUCCESS', elapsed);
        learn();
        ledger.tasks.succeeded(item, t.generateUrl, item.step_index === config.steps.length - 1);
        return { taskEnded: true };
      }
      case 'FAIL': {
        learn();
        if (item.attempt < config.maxAttempts) {
          ledger.tasks.recreate(
            item,
            'FAIL',
            `task ${item.task_id} ended FAIL (attempt ${item.attempt} of ${config.maxAttempts}); creating it again`,
            now,
          );
        } else {
          ledger.tasks.failed(
            item,
            'FAIL',
            `${step.capability} ended FAIL on all ${config.maxAttempts} attempts (last task ${item.task_id})`,
          );
        }
        return { taskEnded: true };
      }
      case 'ERROR':
      case 'OTHER':
        learn();
        ledger.tasks.failed(
          item,
          t.status,
          `${step.capability} task ${item.task_id} ended ${t.status}${t.status === 'ERROR' ? ' (not retryable)' : ' (discarded or unknown to the public API)'}`,
        );
        return { taskEnded: true };
      default:
        return keepPolling(ctx, item, t.status, elapsed);
    }
  } catch (err) {
    if (!isApiError(err)) throw err;
    crashPoint('poll');
    return onPollError(ctx, item, err);
  }
}

function keepPolling(ctx: KeyContext, item: ItemRow, status: string, elapsedMs: number): Feedback {
  const capMs = ctx.config.limits.pollCapMinutes * 60_000;
  if (elapsedMs >= capMs) {
    ctx.ledger.tasks.timedOut(
      item,
      `task ${item.task_id} still ${status} after the polling cap of ${ctx.config.limits.pollCapMinutes} min; held`,
    );
    // Still running as far as anyone knows: its slot stays counted (KeySlots.taskGivenUp).
    return { taskEnded: true, mayStillRun: true };
  }
  const step = ctx.config.steps[item.step_index]!;
  const hint = ctx.ledger.tasks.waitHintOfCurrent(item);
  ctx.ledger.tasks.polled(item, status, clock.now() + ctx.polling.nextDelay(step.capability, hint, elapsedMs));
  return {};
}

function onPollError(ctx: KeyContext, item: ItemRow, err: ApiError): Feedback {
  const { ledger, config } = ctx;
  const step = config.steps[item.step_index]!;
  switch (err.kind) {
    case 'not-found': {
      // 404/-60404 for a task we created: it expired or vanished. It is created again once
      // (recorded as EXPIRED); a second vanishing of the same step fails the photo.
      //
      // A 404 on a task's very first poll could also mean the businessType in the path is
      // wrong (the spec leaves colorize's and background removal's unnamed): then every
      // create is charged and lost. Until that businessType has answered a poll, first-poll
      // 404s are still taken for vanished tasks, until one photo's re-created task 404s on
      // its first poll too; from then on they fail the photo, naming the businessType. A
      // wrong mapping so costs the first wave of photos a second create (about twice the
      // task slots), while tasks that vanish early in a run never cost a photo.
      const firstPoll = ledger.tasks.pollsOfCurrent(item) === 0;
      const bt = item.business_type!;
      const suspectPath = firstPoll && !ledger.tasks.businessTypeAnswered(bt) && ledger.tasks.notFoundTwiceOnFirstPoll(bt);
      if (suspectPath) {
        ledger.tasks.failed(
          item,
          'NOT_FOUND',
          `task ${item.task_id} not found on its first poll, like every ${bt} task so far: the businessType ${bt} used for ${step.capability} is probably wrong (requestId ${err.requestId ?? 'none'})`,
        );
      } else if (!ledger.tasks.hasExpiredBefore(item)) {
        ledger.tasks.recreate(
          item,
          'EXPIRED',
          `task ${item.task_id} vanished (404/-60404, requestId ${err.requestId ?? 'none'}); creating it again once`,
          clock.now(),
        );
      } else {
        ledger.tasks.failed(item, 'EXPIRED', `task ${item.task_id} vanished (404) again after being created anew`);
      }
      return { taskEnded: true };
    }
    case 'stop-account':
      ctx.control.stopForAccount(err);
      return {};
    case 'stop-config':
      // A redirect: the task was not polled; it stays active, due as it was.
      ctx.control.stopForConfig(err);
      return {};
    case 'fix-request': {
      ledger.tasks.failed(item, 'REFUSED', `poll refused: ${err.message}`);
      return { taskEnded: true, mayStillRun: true };
    }
    default: {
      const at = retryAt(err, item.retries, ctx.random);
      ledger.items.patch(item.id, 'active', { due_ms: at, retries: item.retries + 1 });
      return err.kind === 'retry-later' ? { pauseUntilMs: at } : {};
    }
  }
}
