import type { Config } from '../../config/index.js';
import type { ItemRow, Ledger } from '../../ledger/index.js';
import type { KeyBudget, Reservation } from '../budget/keyBudget.js';
import type { PollPlanner } from '../polling/polling.js';

/*
 * What a lane (lane.ts) is handed: its key's part of the run and its stages; and what its
 * stages tell it back.
 */

/** What a stage tells the lane after its call. */
export interface Feedback {
  /** The server asked for a pause (429/503 with Retry-After, RateLimit-Reset, or backoff). */
  readonly pauseUntilMs?: number;
  /** 429 api_key_active_tasks: the server counts more tasks than we do (held ones running, another client's). */
  readonly slotsFull?: boolean;
  /** With slotsFull: the earliest moment the service said to try again (Retry-After, RateLimit-Reset), if it said. */
  readonly slotsRetryAtMs?: number;
  /** A task reached a terminal state (its slot is free). */
  readonly taskEnded?: boolean;
  /** With taskEnded: given up (the polling cap, polls refused), not seen to end: the service may still count it. */
  readonly mayStillRun?: boolean;
}

/**
 * The stages a lane dispatches. Each makes at most one API call, under `ticket`: the
 * call's reservation in the key's budget, which its client reports sending and answer to.
 */
export interface LaneStages {
  upload(item: ItemRow, ticket: Reservation): Promise<Feedback>;
  /** `probe`: into a slot counted busy only by guesses (LaneQueues.createCandidate). */
  create(item: ItemRow, ticket: Reservation, probe?: boolean): Promise<Feedback>;
  poll(item: ItemRow, ticket: Reservation): Promise<Feedback>;
}

/**
 * What a lane asks before it spends on a photo (the run's spending guards,
 * src/run/guards.ts). Answered from memory and the ledger, never with a call.
 */
export interface StartGate {
  /** A queued photo the lane is about to take for upload: false leaves it in the queue. */
  mayTake(item: ItemRow): boolean;
  /** Once the photo cap is reached: only photos this run already took are worked on. */
  readonly onlyTaken: boolean;
  /**
   * A create about to be sent: false when the credit limit cannot buy the photo's steps
   * (the photo is then in `passedOver`), or once it would pass the limit (which stops all creates).
   */
  mayCreate(item: ItemRow): boolean;
  /** Photos waiting for a create that the gate refused: the lane looks past them for the next. */
  readonly passedOver: ReadonlySet<number>;
  /** After each of the lane's finished actions: the gate may see that nothing more can be started (Guards.settle). */
  settle(): void;
  /**
   * Whether no new photo may be started any more (the photo cap is full, the credit limit
   * bought what it could): a lane whose producer may still bring photos (run/supply.ts) then
   * ends with the photos it took.
   */
  full(): boolean;
}

/** The run's switches a lane obeys, and where it reports a bug (run/control.ts). */
export interface LaneControl {
  /** Stop making calls (account stop, signal). */
  readonly stopped: boolean;
  /** No new uploads or creates (insufficient credits, a full disk, a limit): finish polling what is in flight. */
  readonly noCreates: boolean;
  /** A stage threw something it should have classified: the run stops loudly rather than spin. */
  crashed(err: unknown): void;
}

/**
 * What a lane reads of its key's part of the run (run/context.ts KeyContext, handed over as
 * it is): the job's steps and limits, the key, its budget and poll timing, the run's switches
 * and spending guards, and where it tells that an action finished.
 */
export interface LaneContext {
  readonly ledger: Ledger;
  readonly config: Pick<Config, 'steps' | 'limits'>;
  /** The run's keys: as many lanes share the photos no lane has claimed yet (the pacing estimate). */
  readonly keys: readonly unknown[];
  readonly keyFp: string;
  readonly budget: KeyBudget;
  /** This lane's poll timing, whose θ it tunes by which resource holds work back (and the latency model shared by all lanes). */
  readonly polling: PollPlanner;
  readonly control: LaneControl;
  /** The spending guards (--max-photos, --max-credits…), asked before a photo is taken and before each create. */
  readonly guards?: StartGate | undefined;
  /** Told after every finished action, so the downloader and progress display wake up. */
  readonly events: { activity(): void };
  /**
   * Where the run's photos come from while it works (run/supply.ts): a lane does not end
   * before it is done, and uploads no photo that waits for it (its file not where it was).
   */
  readonly supply?: { readonly done: boolean; readonly waiting: ReadonlySet<number> } | undefined;
}

/**
 * After a 429 on api_key_active_tasks: no create before `untilMs`, no probe before
 * `probeUntilMs`. The wait starts near the learned task latency (a slot frees when a task
 * ends), or 15 s before any is known, and doubles with each refusal in a row; a create
 * accepted ends both; one of this run's tasks ending (a slot seen free) ends the first.
 */
export interface SlotWait {
  untilMs: number;
  probeUntilMs: number;
  refusals: number;
  /** The last refusal and the wait it was given: the lane's slots are not raised again for twice that wait. */
  lastMs: number;
  lastWaitMs: number;
}

/** What a lane has under way, kept by its loop (lane.ts) and read by its queues and pacing. */
export interface LaneState {
  /** Photos with a call in flight: not picked again until it ends. */
  readonly inflightItems: Set<number>;
  inflightCalls: number;
  uploadsInflight: number;
  pollsInflight: number;
  /**
   * The slots the lane fills: the key's limit, lowered to what this run holds after a 429
   * on api_key_active_tasks (another client of the key holds the rest), and raised by one
   * with each create accepted while it is full.
   */
  slotLimit: number;
  slotWait: SlotWait;
  /** A probe in flight (LaneQueues.createCandidate): one at a time. */
  probing: boolean;
}
