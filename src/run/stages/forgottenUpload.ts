import type { ApiError } from '../../errors.js';
import type { ItemRow } from '../../ledger/index.js';
import type { RunControl } from '../control.js';
import type { KeyContext } from '../context.js';

/**
 * A create refused with "parameter invalid" (400/-2) may mean the service no longer knows
 * an image darkroom uploaded to it (uploads do not last for ever, and a photo redone or
 * resumed days later uses an old one). Nothing was created, so nothing was charged: the
 * photo is uploaded again and created once more. Only for the first
 * step's create of darkroom's own upload; a URL input or a result passed on from an earlier
 * step is not ours to send again.
 *
 * A -2 right after a fresh upload is about the request, not the image (an unknown
 * resolution or style gives the same answer): the photo fails for good, and from then on a
 * -2 on that capability's first step fails the photo at once in this run, so a setting
 * the service refuses costs each photo one refused create, not an upload and two.
 */

export type ForgottenVerdict =
  | { readonly kind: 'reupload'; readonly reason: string }
  | { readonly kind: 'fail'; readonly reason: string }
  | { readonly kind: 'not-ours' };

/** Capabilities whose first-step -2 proved to be about the request, per run. */
const refusedAfterFresh = new WeakMap<RunControl, Set<string>>();

function isOwnUpload(item: ItemRow): boolean {
  const urlInput = item.content_hash?.startsWith('url:') === true || /^https?:\/\//i.test(item.src_path);
  return item.step_index === 0 && !urlInput && item.image_url !== null && item.input_url === item.image_url;
}

export function forgottenUpload(ctx: KeyContext, item: ItemRow, submissionId: number, capability: string, err: ApiError): ForgottenVerdict {
  if (err.businessCode !== -2 || !isOwnUpload(item)) return { kind: 'not-ours' };
  const said = err.serverMessage ? `: "${err.serverMessage}"` : '';
  let known = refusedAfterFresh.get(ctx.control);
  if (known?.has(capability)) {
    return {
      kind: 'fail',
      reason: `create refused (-2, parameter invalid${said}), as it was right after a fresh upload for other photos of this step: check the step's settings (requestId ${err.requestId ?? 'none'})`,
    };
  }
  const before = ctx.ledger.submissions.lastInputVerdict(item.id, item.step_index, submissionId);
  if (before === 'refused' && item.forgotten_uploads > 0) {
    if (!known) refusedAfterFresh.set(ctx.control, (known = new Set()));
    known.add(capability);
    return {
      kind: 'fail',
      reason: `create refused twice (-2, parameter invalid${said}): once taken for an upload the service had forgotten, then again right after a fresh upload, so the service refuses the request itself: check the step's settings (requestId ${err.requestId ?? 'none'})`,
    };
  }
  return {
    kind: 'reupload',
    reason: `the service no longer knows the uploaded image (create refused -2${said}, requestId ${err.requestId ?? 'none'}); uploading it again`,
  };
}
