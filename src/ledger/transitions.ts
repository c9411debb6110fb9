/**
 * The item lifecycle, declared once. Every state change in the ledger is checked
 * against this table, so a stage can never move an item along an edge nobody designed.
 *
 *   queued → uploading → uploaded → submitting → active → succeeded → downloading → done
 *
 * `uploaded` means "has an input URL for its current step and waits for a create"; the
 * next step of a pipeline re-enters it with the previous step's result URL. `held`
 * (ambiguous create, polling cap), `failed` and `skipped` stand beside the main line.
 */

export const STATES = [
  'queued',
  'uploading',
  'uploaded',
  'submitting',
  'active',
  'succeeded',
  'downloading',
  'done',
  'held',
  'failed',
  'skipped',
  // every name of the photo disappeared from the inputs before it was done (src/ledger/gone.ts)
  'gone',
] as const;

export type ItemState = (typeof STATES)[number];

/** States in which nothing more happens without an operator. */
export const TERMINAL: ReadonlySet<ItemState> = new Set(['done', 'held', 'failed', 'skipped', 'gone']);

const ALLOWED: Readonly<Record<ItemState, readonly ItemState[]>> = {
  // to gone: discovery found none of its names (src/ledger/gone.ts), also from skipped and failed
  queued: ['uploading', 'skipped', 'failed', 'gone'],
  // back to queued: the upload call failed in a way that is safe to repeat
  uploading: ['uploaded', 'queued', 'failed', 'skipped'],
  // to skipped: discovery found its output path unusable before its first create (src/outputs/outputPaths.ts)
  uploaded: ['submitting', 'failed', 'skipped'],
  // back to uploaded: definitely not created (not sent, 429, 503), try again later
  // to queued: the service answered a first-step create of our own upload with -2: it has
  // forgotten the image, so it is uploaded again and created once more (stages/create.ts)
  submitting: ['active', 'uploaded', 'held', 'failed', 'queued'],
  // back to uploaded: FAIL (retry the step) or the task vanished (create again once)
  active: ['succeeded', 'uploaded', 'failed', 'held'],
  // to uploaded: the next step of a pipeline. Never to failed: the task is paid for, and its
  // result is downloaded however long that takes (src/stages/download.ts)
  succeeded: ['downloading', 'uploaded'],
  // back to succeeded: the download or write failed, tried again later (or parked until the
  // next run); to active: the result URL expired, so the task is polled once more for a fresh one
  downloading: ['done', 'succeeded', 'uploaded', 'active'],
  // to queued: its file changed, so the new content is processed again (src/ledger/discovery.ts)
  // to uploaded: the job's steps changed and the operator said --redo-steps: redone from the
  // first step with its upload (src/ledger/stepLists.ts); its output stays until replaced
  done: ['queued', 'uploaded'],
  // an operator's `darkroom retry --held`
  held: ['uploaded', 'active'],
  // `darkroom retry --failed` (src/ledger/failed.ts): queued or uploaded to be created again;
  // succeeded for a photo an older darkroom failed after its task succeeded (only its download was missing);
  // gone: its input disappeared (src/ledger/gone.ts)
  failed: ['queued', 'uploaded', 'succeeded', 'gone'],
  skipped: ['queued', 'gone'],
  // a name of it found again: back to the state it was gone from; to queued also when its name has new content
  gone: ['queued', 'skipped', 'failed'],
};

export class InvalidTransitionError extends Error {
  override readonly name = 'InvalidTransitionError';
  readonly code = 'DARKROOM_INVALID_TRANSITION';
  constructor(
    readonly from: string,
    readonly to: string,
  ) {
    super(`invalid item transition ${from} → ${to}`);
  }
}

export function canTransition(from: ItemState, to: ItemState): boolean {
  return ALLOWED[from].includes(to);
}

export function assertTransition(from: ItemState, to: ItemState): void {
  if (!canTransition(from, to)) throw new InvalidTransitionError(from, to);
}
