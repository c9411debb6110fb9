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
] as const;

export type ItemState = (typeof STATES)[number];

/** States in which nothing more happens without an operator. */
export const TERMINAL: ReadonlySet<ItemState> = new Set(['done', 'held', 'failed', 'skipped']);

const ALLOWED: Readonly<Record<ItemState, readonly ItemState[]>> = {
  queued: ['uploading', 'skipped', 'failed'],
  // back to queued: the upload call failed in a way that is safe to repeat
  uploading: ['uploaded', 'queued', 'failed', 'skipped'],
  uploaded: ['submitting', 'failed'],
  // back to uploaded: definitely not created (not sent, 429, 503), try again later
  // to queued: the service answered a first-step create of our own upload with -2: it has
  // forgotten the image, so it is uploaded again and created once more (pipeline/create.ts)
  submitting: ['active', 'uploaded', 'held', 'failed', 'queued'],
  // back to uploaded: FAIL (retry the step) or the task vanished (create again once)
  active: ['succeeded', 'uploaded', 'failed', 'held'],
  // to uploaded: the next step of a pipeline
  succeeded: ['downloading', 'uploaded', 'failed'],
  // to active: the result URL expired, so the task is polled once more for a fresh one
  downloading: ['done', 'succeeded', 'failed', 'uploaded', 'active'],
  // to queued: its file changed, so the new content is processed again (src/ledger/identity.ts)
  // to uploaded: the job's steps changed and the operator said --redo-steps: redone from the
  // first step with its upload (src/ledger/stepLists.ts); its output stays until replaced
  done: ['queued', 'uploaded'],
  // an operator's `darkroom retry --held`
  held: ['uploaded', 'active'],
  failed: ['queued', 'uploaded'],
  skipped: ['queued'],
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
