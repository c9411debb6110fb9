import type { ItemRow } from '../ledger/index.js';
import type { PollPlanner } from './polling.js';
import type { Reservation } from './reservation.js';

/*
 * What a lane (lane.ts) is handed: its stages, the run's switches and guards, its options;
 * and what its stages tell it back.
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

/** Run-wide switches the lanes obey. */
export interface RunControl {
  /** Stop making calls (account stop, signal). */
  stopped: boolean;
  /** No new creates (insufficient credits): finish polling what is in flight. */
  noCreates: boolean;
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
}

export interface LaneOptions {
  readonly keyFp: string;
  readonly activeTasks: number;
  /** Calls of this lane in flight at once; a slow upload must not stall due polls. */
  readonly maxInflight?: number;
  /** Called after every finished action, so the downloader and progress display wake up. */
  readonly onActivity?: () => void;
  /** Poll timing whose θ this lane tunes by which resource holds work back. */
  readonly polling?: PollPlanner;
  /** Typical task latency (ms), the pace at which θ moves. */
  readonly latencyScaleMs?: () => number;
  /** Steps of the job, and how many lanes share the unclaimed photos: for the pacing estimate. */
  readonly stepCount?: number;
  readonly laneCount?: number;
  /** The job's steps' capabilities, for the price of a poll (price.ts). */
  readonly capabilities?: readonly string[];
  /** The spending guards (--max-photos, --max-credits…), asked before a photo is taken and before each create. */
  readonly gate?: StartGate;
  /**
   * The task latency this run has learned (ms), or null before any task was seen to end:
   * the first wait after a 429 on api_key_active_tasks (SlotWait).
   */
  readonly learnedLatencyMs?: () => number | null;
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
