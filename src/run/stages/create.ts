import { CAPABILITIES, isApiError, newRequestId, type CreateBody } from '../../api/index.js';
import type { ApiError } from '../../errors.js';
import { clock } from '../../clock.js';
import { withMode, type StepConfig } from '../../config/index.js';
import { crashPoint, type ItemRow } from '../../ledger/index.js';
import { retryAt } from '../../scheduler/budget/backoff.js';
import type { Feedback } from '../../scheduler/lane/types.js';
import type { KeyContext } from '../context.js';
import { forgottenUpload } from './forgottenUpload.js';

function createBody(step: StepConfig, image: string): CreateBody {
  const body: CreateBody = { image };
  if (step.mode !== undefined) body.mode = step.mode;
  if (step.resolution !== undefined) body.resolution = step.resolution;
  if (step.style !== undefined) body.style = step.style;
  if (step.prompt !== undefined) body.prompt = step.prompt;
  if (step.negativePrompt !== undefined) body.negativePrompt = step.negativePrompt;
  return body;
}

/**
 * uploaded → submitting → active, by the create protocol (L1, L2): the submission is
 * committed as `sending` with its X-Request-Id before the request leaves; afterwards it
 * is accepted, rejected (definitely not created), or ambiguous (the item is held and
 * never resent on its own).
 */
export async function createStage(ctx: KeyContext, item: ItemRow): Promise<Feedback> {
  const { ledger } = ctx;
  // A photo sent back by `retry --rejected --mode M` is made with that mode.
  const jobStep = ctx.config.steps[item.step_index];
  const step = jobStep && withMode(jobStep, ledger.reviews.redoModeOf(item.id));
  if (!step || !item.input_url) {
    const reason = `internal: no step ${item.step_index} or no input URL`;
    ledger.items.move(item.id, 'uploaded', 'failed', { reason }, reason);
    return {};
  }
  const requestId = newRequestId();
  const submissionId = ledger.submissions.begin(item, step.capability, ctx.keyFp, requestId);
  // Said in the log: a 429 on api_key_active_tasks that answers it is the service's answer asked for.
  if (ctx.probe)
    ctx.log.info(
      { item: item.id, sentRequestId: requestId },
      'probe: a create into a slot counted busy only by held creates or a stopped run, which may have ended',
    );
  try {
    const r = await ctx.client.create(step.capability, createBody(step, item.input_url), { requestId, signal: ctx.control.abort });
    crashPoint('create');
    // The create response's own, else the table plus service.businessTypes.
    const businessType = r.businessType ?? ctx.config.businessTypes?.[step.capability] ?? CAPABILITIES[step.capability].businessType;
    const delay = ctx.polling.firstDelay(step.capability, r.waitTimeMs);
    ledger.submissions.accept(submissionId, item, {
      taskId: r.taskId,
      businessType,
      responseRequestId: r.requestId ?? null,
      waitHintMs: r.waitTimeMs,
      pollAtMs: clock.now() + delay,
    });
    return {};
  } catch (err) {
    if (!isApiError(err)) throw err;
    crashPoint('create');
    return onCreateError(ctx, item, submissionId, err);
  }
}

function onCreateError(ctx: KeyContext, item: ItemRow, submissionId: number, err: ApiError): Feedback {
  const { ledger } = ctx;
  const outcome = { httpStatus: err.httpStatus, code: err.businessCode, responseRequestId: err.requestId, error: err.message };
  switch (err.kind) {
    case 'ambiguous': {
      const reason = `create outcome unknown (${err.answer}); a task may exist and be charged. X-Request-Id ${err.sentRequestId}`;
      ledger.submissions.ambiguous(submissionId, item, outcome, reason);
      // The operator's standing choice, bounded like FAIL retries: a service that drops
      // every answer must not be paid for without end.
      if (ctx.config.onAmbiguous === 'resubmit' && ledger.submissions.ambiguousCount(item.id, item.step_index) < ctx.config.maxAttempts) {
        ledger.items.move(item.id, 'held', 'uploaded', { due_ms: clock.now() }, 'onAmbiguous: resubmit');
      }
      ctx.log.warn({ item: item.id, code: err.answer, sentRequestId: err.sentRequestId }, 'create held: outcome unknown');
      return {};
    }
    case 'not-sent':
    case 'retry-later': {
      const at = retryAt(err, item.retries, ctx.random);
      ledger.submissions.reject(submissionId, item, outcome, 'uploaded', at, err.answer);
      if (err.rateLimit?.scope === 'api_key_active_tasks') {
        const said = err.retryAfterMs !== null || (err.rateLimit.resetAtMs ?? 0) > clock.now();
        return said ? { slotsFull: true, slotsRetryAtMs: at } : { slotsFull: true };
      }
      return err.kind === 'retry-later' ? { pauseUntilMs: at } : {};
    }
    case 'stop-account':
      ledger.submissions.reject(submissionId, item, outcome, 'uploaded', 0, err.answer);
      ctx.control.stopForAccount(err);
      return {};
    case 'stop-config':
      // A redirect, not the service's answer: not created, back to wait for a create.
      ledger.submissions.reject(submissionId, item, outcome, 'uploaded', 0, err.answer);
      ctx.control.stopForConfig(err);
      return {};
    case 'fix-request':
    case 'not-found': {
      const lost = forgottenUpload(ctx, item, submissionId, ledger.submissions.get(submissionId)?.capability ?? '', err);
      if (lost.kind === 'reupload') {
        // Refused, so not created and not charged: upload again (keeping the key) and create once more.
        ledger.submissions.reject(submissionId, item, outcome, 'queued', 0, lost.reason, {
          image_url: null,
          input_url: null,
          retries: 0,
          forgotten_uploads: item.forgotten_uploads + 1,
        });
        ctx.log.warn({ item: item.id, requestId: err.requestId }, lost.reason);
        return {};
      }
      ledger.submissions.reject(
        submissionId,
        item,
        outcome,
        'failed',
        0,
        lost.kind === 'fail' ? lost.reason : `create refused: ${err.message}`,
      );
      return {};
    }
  }
}
