import { existsSync } from 'node:fs';
import { isApiError } from '../../api/index.js';
import { clock } from '../../clock.js';
import { crashPoint, type ItemRow } from '../../ledger/index.js';
import { retryAt } from '../../scheduler/budget/backoff.js';
import type { Feedback } from '../../scheduler/lane/types.js';
import type { KeyContext } from '../context.js';
import { checkWhole } from '../../inputs/integrity.js';
import { outputPathProblem } from '../../outputs/outputPaths.js';
import { prepareUpload } from '../../inputs/transcode.js';

/**
 * queued → uploading → uploaded. An upload costs a call but no credit, so any failure
 * that is not the file's own fault is simply tried again later.
 */
export async function uploadStage(ctx: KeyContext, item: ItemRow): Promise<Feedback> {
  const { ledger } = ctx;
  // Before the first call: an output that cannot be written would be a photo paid for and not delivered.
  const unwritable = outputPathProblem(ledger, item, ctx.config);
  if (unwritable !== null) {
    ledger.items.move(item.id, 'queued', 'skipped', { reason: unwritable }, unwritable);
    return {};
  }
  // The file's bytes, or TIFF/BMP/16-bit PNG/EXIF-rotated/oversized ones converted, the
  // source untouched (inputs/transcode.ts). Checked again here, not only at discovery:
  // the file may have changed since, and a truncated image is only found by reading all of it.
  const { input, limits } = ctx.config;
  const prepared = await prepareUpload(item, {
    transcode: input.transcode,
    maxPixels: input.maxPixels,
    maxUploadBytes: limits.maxUploadBytes,
    maxInputPixels: limits.maxInputPixels,
  });
  if (prepared.kind === 'url') {
    // A URL input back in the queue (an operator's retry): the service fetches it, nothing to upload.
    const c = ledger.items.move(item.id, 'queued', 'uploading', { key_fp: ctx.keyFp });
    ledger.items.move(
      c.id,
      'uploading',
      'uploaded',
      { image_url: prepared.url, input_url: prepared.url, due_ms: 0, retries: 0 },
      'URL input',
    );
    return {};
  }
  const refused =
    prepared.kind === 'skip'
      ? prepared.reason
      : prepared.transcoded === null
        ? await clock.io(checkWhole(prepared.bytes, prepared.type))
        : null;
  // The discovery goes on beside the lanes: while the file was read it may have found the
  // photo changed (reset to its new content), renamed (its file elsewhere), refused or gone.
  // Then nothing is done now; the lane looks again at what the ledger says.
  const now = ledger.items.get(item.id);
  if (now?.state !== 'queued' || now.content_hash !== item.content_hash || now.src_path !== item.src_path) return {};
  // Its file is not where the ledger last saw it (renamed, moved or deleted since the last run):
  // the walk, still going on, will record its new name or that it is gone. (Once the walk has
  // ended, a followed folder's watcher says no more about a file it never saw: it is skipped.)
  if (prepared.kind === 'skip' && ctx.supply.walking && !existsSync(item.src_path)) {
    ctx.supply.waitFor(item.id);
    return {};
  }
  if (refused !== null || prepared.kind !== 'bytes') {
    ledger.items.move(item.id, 'queued', 'skipped', { reason: refused }, refused);
    return {};
  }
  if (prepared.transcoded !== null) ctx.log.debug({ item: item.id, transcoded: prepared.transcoded }, 'converted before upload');
  // New work stopped while the file was read (a full output disk, credits out): not uploaded now, still queued.
  if (ctx.control.noCreates) return {};
  const claimed = ledger.items.move(item.id, 'queued', 'uploading', { key_fp: ctx.keyFp });
  try {
    const { imageUrl } = await ctx.client.upload(prepared.bytes, prepared.filename, prepared.contentType, { signal: ctx.control.abort });
    crashPoint('upload');
    ledger.items.move(claimed.id, 'uploading', 'uploaded', { image_url: imageUrl, input_url: imageUrl, due_ms: 0, retries: 0 });
    return {};
  } catch (err) {
    if (!isApiError(err)) throw err;
    switch (err.kind) {
      case 'fix-request': {
        const reason = `upload refused: ${err.message}`;
        ledger.items.move(claimed.id, 'uploading', 'failed', { reason, request_id: err.requestId }, reason);
        return {};
      }
      case 'stop-account':
        ledger.items.move(claimed.id, 'uploading', 'queued', { due_ms: 0 });
        ctx.control.stopForAccount(err);
        return {};
      case 'stop-config':
        // A redirect: the upload was not made; the photo waits for it, its retries untouched.
        ledger.items.move(claimed.id, 'uploading', 'queued', { due_ms: 0 }, err.answer);
        ctx.control.stopForConfig(err);
        return {};
      default: {
        // retry-later, not-sent, ambiguous (a repeated upload costs a call, never a credit), not-found
        const at = retryAt(err, claimed.retries, ctx.random);
        ledger.items.move(claimed.id, 'uploading', 'queued', { due_ms: at, retries: claimed.retries + 1 }, err.answer);
        ctx.log.warn({ item: item.id, code: err.answer, requestId: err.requestId }, 'upload will be retried');
        return err.kind === 'retry-later' ? { pauseUntilMs: at } : {};
      }
    }
  }
}
