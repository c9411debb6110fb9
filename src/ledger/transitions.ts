/**
 * The state vocabulary, declared once (docs/ARCHITECTURE.md § States): every item state
 * with its phase, whether an item may be written in it, and every edge out of it; then the
 * submission states the same way. Every insert and every state change in the ledger is
 * checked against these tables, so no stage can move a row along an edge nobody designed,
 * and status, plan, the progress display and the report read the same derived words
 * (pending, running, past its step, creates left) from here instead of listing states.
 *
 *   queued → uploading → uploaded → submitting → active → succeeded → downloading → done
 *
 * `uploaded` means "has an input URL for its current step and waits for a create"; the
 * next step of a pipeline re-enters it with the previous step's result URL. `held`
 * (ambiguous create, polling cap), `failed` and `skipped` stand beside the main line.
 */
import { InvalidTransitionError } from '../errors.js';

/**
 * Where an item is on its current step:
 * - `upload`: its file is still to be uploaded (queued, uploading);
 * - `create`: it has an input URL and waits for a create (uploaded);
 * - `running`: a create is in flight or its task runs: it holds one of the key's task
 *   slots (submitting, active);
 * - `paid`: its task succeeded (charged); the result is passed on or downloaded (succeeded, downloading);
 * - and the ends: `done`, `held`, `failed`, `skipped`, `gone`.
 */
export type Phase = 'upload' | 'create' | 'running' | 'paid' | 'done' | 'held' | 'failed' | 'skipped' | 'gone';

interface StateInfo {
  readonly phase: Phase;
  /** An item may be inserted in this state (a file: queued; a URL line: uploaded, there is nothing to upload). */
  readonly entry?: true;
  /** Nothing more happens without an operator or a change of the inputs. */
  readonly terminal?: true;
  readonly next: readonly string[];
}

const ITEM = {
  // to gone: discovery found none of its names (src/ledger/discovery.ts, markGone), also from skipped and failed
  queued: { phase: 'upload', entry: true, next: ['uploading', 'skipped', 'failed', 'gone'] },
  // back to queued: the upload call failed in a way that is safe to repeat
  uploading: { phase: 'upload', next: ['uploaded', 'queued', 'failed', 'skipped'] },
  // entry: a URL input (src/ledger/discovery.ts). To skipped: discovery found its output
  // path unusable before its first create (src/outputs/outputPaths.ts)
  uploaded: { phase: 'create', entry: true, next: ['submitting', 'failed', 'skipped'] },
  // back to uploaded: definitely not created (not sent, 429, 503), try again later
  // to queued: the service answered a first-step create of our own upload with -2: it has
  // forgotten the image, so it is uploaded again and created once more (src/run/stages/create.ts)
  submitting: { phase: 'running', next: ['active', 'uploaded', 'held', 'failed', 'queued'] },
  // back to uploaded: FAIL (retry the step) or the task vanished (create again once)
  active: { phase: 'running', next: ['succeeded', 'uploaded', 'failed', 'held'] },
  // to uploaded: the next step of a pipeline. Never to failed: the task is paid for, and its
  // result is downloaded however long that takes (src/run/stages/download.ts)
  succeeded: { phase: 'paid', next: ['downloading', 'uploaded'] },
  // back to succeeded: the download or write failed, tried again later (or parked until the
  // next run); to active: the result URL expired, so the task is polled once more for a fresh one
  downloading: { phase: 'paid', next: ['done', 'succeeded', 'uploaded', 'active'] },
  // to queued: its file changed, so the new content is processed again (src/ledger/discovery.ts)
  // to uploaded: the job's steps changed and the operator said --redo-steps: redone from the
  // first step with its upload (src/ledger/stepLists.ts); its output stays until replaced
  done: { phase: 'done', terminal: true, next: ['queued', 'uploaded'] },
  // an operator's `darkroom retry --held`
  held: { phase: 'held', terminal: true, next: ['uploaded', 'active'] },
  // `darkroom retry --failed` (src/ledger/failed.ts): queued or uploaded to be created again;
  // succeeded for a photo an older darkroom failed after its task succeeded (only its download was missing);
  // gone: its input disappeared (src/ledger/discovery.ts, markGone)
  failed: { phase: 'failed', terminal: true, next: ['queued', 'uploaded', 'succeeded', 'gone'] },
  skipped: { phase: 'skipped', terminal: true, next: ['queued', 'gone'] },
  // every name of the photo disappeared from the inputs before it was done (src/ledger/discovery.ts, markGone);
  // a name of it found again: back to the state it was gone from; to queued also when its name has new content
  gone: { phase: 'gone', terminal: true, next: ['queued', 'skipped', 'failed'] },
} as const satisfies Record<string, StateInfo>;

export type ItemState = keyof typeof ITEM;

/** Every item state, in the table's order (the order of `status --json`'s `states`). */
export const STATES = Object.keys(ITEM) as ItemState[];

export const phaseOf = (s: ItemState): Phase => ITEM[s].phase;

/** States in which nothing more happens without an operator. */
export const TERMINAL: ReadonlySet<ItemState> = new Set(STATES.filter((s) => 'terminal' in ITEM[s]));

/** The states of each phase, e.g. `inPhase('running')` = submitting, active. */
export function inPhase(...phases: Phase[]): ItemState[] {
  return STATES.filter((s) => phases.includes(ITEM[s].phase));
}

/** As an SQL list for `state IN …`, e.g. `('submitting', 'active')`. */
export function sqlList(states: readonly ItemState[]): string {
  return `(${states.map((s) => `'${s}'`).join(', ')})`;
}

/**
 * Whether the create of an item's current step was made: 1 once its task exists (active,
 * paid), 0 before (a create in flight, submitting, counts as not made: its outcome is not
 * known yet), null when the item needs no more creates (the ends).
 */
function createMade(state: ItemState): 0 | 1 | null {
  const phase = ITEM[state].phase;
  if (phase === 'upload' || phase === 'create') return 0;
  if (phase === 'running') return state === 'active' ? 1 : 0;
  if (phase === 'paid') return 1;
  return null;
}

/** Creates still to be made for an item of `steps` steps: one per step from its current one, less one made. */
export function createsLeft(state: ItemState, step: number, steps: number): number {
  const made = createMade(state);
  return made === null ? 0 : Math.max(0, steps - step - made);
}

/** createsLeft as an SQL expression over `state` and `step_index`, with the step count bound as `@steps`. */
export function createsLeftSql(): string {
  const cases = STATES.map((s) => {
    const made = createMade(s);
    return `WHEN '${s}' THEN ${made === null ? '0' : `MAX(0, @steps - step_index - ${made})`}`;
  });
  return `CASE state ${cases.join(' ')} ELSE 0 END`;
}

export function canTransition(from: ItemState, to: ItemState): boolean {
  return (ITEM[from].next as readonly string[]).includes(to);
}

export function assertTransition(from: ItemState, to: ItemState): void {
  if (!canTransition(from, to)) throw new InvalidTransitionError(from, to);
}

/** An item is written in a state it may enter the ledger in (queued for a file, uploaded for a URL line). */
export function assertEntry(state: ItemState): void {
  if (!('entry' in ITEM[state])) throw new InvalidTransitionError('(new)', state);
}

/**
 * A create's submission (L1): written `sending` with its X-Request-Id before the request
 * leaves, resolved once. `ambiguous` is final too: the outcome is unknown for good (the
 * photo is held, and `retry --held` makes a new submission rather than changing this one).
 */
const SUBMISSION = {
  sending: { entry: true, next: ['accepted', 'rejected', 'ambiguous'] },
  accepted: { next: [] },
  rejected: { next: [] },
  ambiguous: { next: [] },
} as const satisfies Record<string, { readonly entry?: true; readonly next: readonly string[] }>;

export type SubmissionState = keyof typeof SUBMISSION;

export function assertSubmissionTransition(from: SubmissionState | null, to: SubmissionState): void {
  const ok = from === null ? 'entry' in SUBMISSION[to] : (SUBMISSION[from].next as readonly string[]).includes(to);
  if (!ok) throw new InvalidTransitionError(`submission ${from ?? '(new)'}`, to);
}
