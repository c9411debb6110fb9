/**
 * A create, past the key and the limits (model.ts): parameters (-2/-3) → subscription
 * (24403, or the injected 24403-in-200) → the image (-2) → credits (20601) → the task.
 * Creation shapes, one per capability family:
 * - enhance → {parentTaskId, tasks:[{taskId, asyncTaskQueueVO}], queueStatus};
 * - image2image → {asyncTaskQueueVO:{rank, waitTime, asyncTaskId}} with a numeric id;
 * - restore, unblur, upscale → {taskId, businessType, status};
 * - colorize and background removal → {taskId, status} without businessType (the spec's
 *   gap: the client must fall back to COLORIZE / REMOVE_BACKGROUND, which the poll accepts).
 */
import type { Capability } from '../spec/capabilities.js';
import { clock } from '../clock.js';
import { TASK_COST } from './account.js';
import type { Lane } from './limits.js';
import { parseCreateBody, type Parsed } from './params.js';
import type { SimParts } from './parts.js';
import { CODES, fail, jsonResponse, ok, type SimRequest, type SimResponse } from './responses.js';
import type { QueueInfo, ResolvedImage } from './taskBook.js';
import type { Task } from './tasks.js';

export interface CreateOutcome {
  res: SimResponse;
  /** The task this create made, when it made one. */
  task?: Task;
  /** The answer is itself an injected fault: no further fault applies to it. */
  injected?: boolean;
}

export async function create(
  parts: SimParts,
  capability: Capability,
  req: SimRequest,
  lane: Lane,
  requestId: string,
): Promise<CreateOutcome> {
  const { cfg, faults, recorder, account } = parts;
  const parsed = parseCreateBody(capability, req.body, cfg.styles);
  if (!parsed.ok) return { res: fail(requestId, 400, parsed.code, parsed.message) };
  if (!account.subscribed) {
    return { res: fail(requestId, 400, CODES.NOT_SUBSCRIBED, 'account is not subscribed or out of the subscription period') };
  }
  if (faults.notSubscribed200()) {
    recorder.fault('notSubscribed200');
    // The published example's shape: HTTP 200, no requestId in the body or its header.
    return {
      res: jsonResponse(200, { code: CODES.NOT_SUBSCRIBED, message: 'not subscribed or out of the subscription period' }),
      injected: true,
    };
  }

  lane.creating++;
  let image: Parsed<ResolvedImage>;
  try {
    image = await parts.images.resolve(parsed.value.image);
  } finally {
    lane.creating--;
  }
  if (!image.ok) return { res: fail(requestId, 400, image.code, image.message) };

  const now = clock.now();
  account.settle(now);
  if (account.availableCredits() < TASK_COST) return { res: fail(requestId, 400, CODES.NO_CREDITS, 'insufficient credits') };

  const { task, queue } = parts.tasks.accept(capability, lane, image.value, parsed.value.process, now);
  return { res: ok(requestId, creationData(task, queue)), task };
}

function creationData(task: Task, queue: QueueInfo): unknown {
  switch (task.capability) {
    case 'enhance':
      return {
        parentTaskId: `p${task.taskId}`,
        tasks: [{ taskId: task.taskId, asyncTaskQueueVO: queue }],
        queueStatus: 'PENDING',
      };
    case 'image2image':
      return { asyncTaskQueueVO: { ...queue, asyncTaskId: Number(task.taskId) } };
    case 'colorize':
    case 'remove-background':
      return { taskId: task.taskId, status: 'PENDING' };
    default:
      return { taskId: task.taskId, businessType: task.businessType, status: 'PENDING' };
  }
}
