import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { isApiError } from '../api/index.js';
import { clock } from '../clock.js';
import type { ItemRow } from '../ledger/index.js';
import type { Feedback } from '../scheduler/lane.js';
import { retryAt, stopForAccount, type StageContext } from './context.js';
import { CONTENT_TYPES, sniffImage } from './inspect.js';

/**
 * queued → uploading → uploaded. An upload costs a call but no credit, so any failure
 * that is not the file's own fault is simply tried again later.
 */
export async function uploadStage(ctx: StageContext, item: ItemRow): Promise<Feedback> {
  const { ledger } = ctx;
  let bytes: Buffer;
  try {
    bytes = await clock.io(readFile(item.src_path));
  } catch (err) {
    const reason = `cannot read ${item.rel_path} (${(err as NodeJS.ErrnoException).code ?? String(err)})`;
    ledger.items.move(item.id, 'queued', 'skipped', { reason }, reason);
    return {};
  }
  const type = sniffImage(bytes.subarray(0, 16));
  if (type === null || bytes.length === 0) {
    const reason = bytes.length === 0 ? 'empty file' : 'not a JPG, PNG or WEBP image by its content';
    ledger.items.move(item.id, 'queued', 'skipped', { reason }, reason);
    return {};
  }
  const claimed = ledger.items.move(item.id, 'queued', 'uploading', { key_fp: ctx.keyFp });
  try {
    const { imageUrl } = await ctx.client.upload(bytes, path.basename(item.rel_path), CONTENT_TYPES[type]);
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
        stopForAccount(ctx, err);
        return {};
      default: {
        // retry-later, not-sent, ambiguous (a repeated upload costs a call, never a credit), not-found
        const at = retryAt(err, claimed.retries, ctx.random);
        ledger.items.move(claimed.id, 'uploading', 'queued', { due_ms: at, retries: claimed.retries + 1 }, err.code);
        ctx.log.warn({ item: item.id, code: err.code, requestId: err.requestId }, 'upload will be retried');
        return err.kind === 'retry-later' ? { pauseUntilMs: at } : {};
      }
    }
  }
}
