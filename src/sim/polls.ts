/**
 * A poll: status REQUESTED for the first 10% of the latency, then PENDING, then the
 * outcome; generateUrl only at SUCCESS (resultOrigin.ts). Any key may poll any task of the
 * account. An unknown task or businessType is 404/-60404, and so is a task that vanishes.
 */
import type { Lane } from './limits.js';
import type { SimParts } from './parts.js';
import { CODES, fail, ok, type SimResponse } from './responses.js';
import { statusAt } from './tasks.js';

export function poll(parts: SimParts, businessType: string, taskId: string, lane: Lane, requestId: string, now: number): SimResponse {
  parts.recorder.polled(lane.fingerprint);
  const notFound = () => fail(requestId, 404, CODES.TASK_NOT_FOUND, 'task not found for this businessType');
  const task = parts.tasks.live(taskId);
  if (!task || task.businessType !== businessType) return notFound();
  if (parts.tasks.vanishesAt(task, now)) return notFound();
  const status = statusAt(task, now);
  if (task.seenEndedAt === undefined && now >= task.completesAt) task.seenEndedAt = now;
  return ok(requestId, {
    taskId: task.taskId,
    status,
    creation: task.creation,
    generateUrl: status === 'SUCCESS' ? parts.origin.currentUrl(task, now) : null,
  });
}
