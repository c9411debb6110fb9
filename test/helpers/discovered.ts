import { createHash } from 'node:crypto';
import type { ItemRow, ItemState, Ledger, ReconcileReport } from '../../src/ledger/index.js';

/** A photo a test's discovery "found": a name, and as much of the rest as the test cares about. */
export interface FoundPhoto {
  /** Path under input.dir, with '/'. */
  readonly relPath: string;
  /** Absolute path; default `/in/<relPath>`. */
  readonly srcPath?: string;
  readonly sizeBytes?: number;
  /** Refused before any call (not an image, empty): recorded as skipped. */
  readonly skipReason?: string | null;
  /** What identifies it (a file's bytes, as discovery hashes them); default its name, so every name is a photo of its own. */
  readonly content?: string | Buffer;
}

/**
 * Items put in a ledger the way a run's discovery puts them: reconciled by content
 * (src/ledger/discovery.ts), so a test starts from a ledger production could have made.
 * New items get ids in the list's order. Like a run's, each call is everything found: a
 * photo not started yet and left out is marked gone.
 */
export function discovered(ledger: Ledger, photos: readonly (FoundPhoto | string)[]): ReconcileReport {
  const files = photos.map((p) => {
    const f: FoundPhoto = typeof p === 'string' ? { relPath: p } : p;
    const src = f.srcPath ?? `/in/${f.relPath}`;
    return {
      name: f.relPath,
      src,
      sizeBytes: f.sizeBytes ?? 1,
      mtimeMs: null,
      contentHash: sha256(f.content ?? `test photo ${f.relPath}`),
      skipReason: f.skipReason ?? null,
    };
  });
  return ledger.discovery.reconcile(files, [], { keyFps: [] });
}

/**
 * A photo found (as `discovered` makes it), uploaded, created and its task ended SUCCESS,
 * each move through the ledger's API as the stages make it: waiting for its result at
 * `resultUrl` to be downloaded (the last step's).
 */
export function succeededItem(ledger: Ledger, rel: string, resultUrl: string): ItemRow {
  discovered(ledger, [rel]);
  const id = ledger.items.all().at(-1)!.id;
  ledger.items.move(id, 'queued', 'uploading', { key_fp: 'k' });
  ledger.items.move(id, 'uploading', 'uploaded', { input_url: 'http://x/u.jpg' });
  const s = ledger.submissions.begin(ledger.items.get(id)!, 'enhance', 'k', `dr-${id}`);
  ledger.submissions.accept(s, ledger.items.get(id)!, {
    taskId: `t${id}`,
    businessType: 'ENHANCE',
    responseRequestId: null,
    waitHintMs: null,
    pollAtMs: 0,
  });
  return ledger.tasks.succeeded(ledger.items.get(id)!, resultUrl, true);
}

/**
 * Photo `id` (queued, as `discovered` makes it) taken through the ledger's API, as the
 * stages take it, to `state` on step `step` of a pipeline of `steps`: every earlier step's
 * task created and ended SUCCESS, then on this step as far as `state`. Held: its create's
 * outcome unknown (L2).
 */
export function putAt(ledger: Ledger, id: number, step: number, state: ItemState, steps: number): ItemRow {
  const item = () => ledger.items.get(id)!;
  const move = (to: ItemState, patch = {}) => ledger.items.move(id, item().state, to, patch);
  const create = () => ledger.submissions.begin(item(), 'enhance', 'k', `dr-${id}-${item().step_index}`);
  const accept = (sub: number) =>
    ledger.submissions.accept(sub, item(), {
      taskId: `t${id}-${item().step_index}`,
      businessType: 'ENHANCE',
      responseRequestId: null,
      waitHintMs: null,
      pollAtMs: 0,
    });
  if (state === 'queued') return item();
  move('uploading', { key_fp: 'k' });
  move('uploaded', { input_url: 'http://x/u.jpg' });
  for (let s = 0; s < step; s++) {
    accept(create());
    ledger.tasks.succeeded(item(), `http://r/${id}-${s}.jpg`, false);
  }
  if (state === 'uploaded') return item();
  const sub = create();
  if (state === 'held') {
    ledger.submissions.ambiguous(
      sub,
      item(),
      { httpStatus: null, code: null, responseRequestId: null, error: 'timeout' },
      'outcome unknown',
    );
    return item();
  }
  accept(sub);
  if (state === 'active') return item();
  if (state === 'failed') return ledger.tasks.failed(item(), 'ERROR', 'task ERROR');
  const last = step === steps - 1;
  ledger.tasks.succeeded(item(), `http://r/${id}-${step}.jpg`, last);
  if (state === 'succeeded') return item();
  ledger.outputs.start(item());
  if (state === 'downloading') return item();
  ledger.outputs.done(item(), `/out/${id}.jpg`);
  return item();
}

function sha256(data: string | Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}
