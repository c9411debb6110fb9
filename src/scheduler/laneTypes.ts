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
  /** 429 api_key_active_tasks: the server counts more of our tasks than we do. */
  readonly slotsFull?: boolean;
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
  create(item: ItemRow, ticket: Reservation): Promise<Feedback>;
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
  /** A create about to be sent: false once it would pass the credit limit (which stops all creates). */
  mayCreate(item: ItemRow): boolean;
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
}

/** What a lane has under way, kept by its loop (lane.ts) and read by its queues and pacing. */
export interface LaneState {
  /** Photos with a call in flight: not picked again until it ends. */
  readonly inflightItems: Set<number>;
  inflightCalls: number;
  uploadsInflight: number;
  pollsInflight: number;
  /** The slots the lane fills: the key's limit, lower after a 429 on api_key_active_tasks. */
  slotLimit: number;
}
