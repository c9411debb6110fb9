import { clock } from '../../clock.js';
import type { ItemRow } from '../../ledger/index.js';
import type { LaneContext, LaneState } from './types.js';

/**
 * Photos uploaded ahead of the slots, beyond one. Uploads come last (due polls, then
 * creates), so these take only room in the windows nothing else wanted — on a call-bound
 * key, the minutes in which three long tasks hold every slot — and every photo needs its
 * upload anyway, so it is a call moved earlier, not one more. Not while the hour paces the
 * key: there each call leaves at the hour's rate, and one spent early on an upload is a
 * poll later — unless the pacing bucket is full, when a call not made is lost to the hour
 * anyway. Nor more than two: an upload may be
 * forgotten by the service before its create (it is then uploaded again: stages/create).
 */
const UPLOADS_AHEAD = 2;

/**
 * A poll ahead of its time (LaneQueues.pollAhead) only on a task likely ended: one that
 * finds it running still costs a token the bucket may want soon.
 */
const POLL_AHEAD_CHANCE = 0.8;
/** A probe's wait from a guessed task's start before any task latency is known (LaneQueues.probeAt). */
const FIRST_PROBE_AFTER_MS = 15_000;
/** While the bucket is full, how often pollAhead asks again whether a task has likely ended. */
const POLL_AHEAD_RECHECK_MS = 1000;

/** One thing a lane may do next: one call for one photo; `probe`: a create into a slot only guessed busy (LaneQueues.createCandidate). */
export type Action = { kind: 'poll' | 'create' | 'upload'; item: ItemRow; probe?: boolean };

/**
 * A lane's queues, read from the ledger by state (docs/ARCHITECTURE.md § States): active
 * photos to poll, uploaded ones to create, queued ones to upload. Priorities when calls
 * are short: due polls, then creates into free slots, then uploads just in time (never
 * more inputs uploaded-but-not-created than free slots plus one, and UPLOADS_AHEAD more
 * while the hour does not pace the key, so an upload is not spent long before its create).
 */
export class LaneQueues {
  constructor(
    private readonly ctx: LaneContext,
    private readonly state: LaneState,
  ) {}

  /**
   * Nothing left for this lane: no call in flight, no photo it could still move, and none
   * still to come from the run's producer (its discovery, a followed folder) — unless the
   * lane takes no new photo: past the photo cap, or with creates stopped.
   */
  finished(): boolean {
    const fp = this.ctx.keyFp;
    if (this.ctx.control.stopped) return this.state.inflightCalls === 0;
    if (this.state.inflightCalls > 0) return false;
    const items = this.ctx.ledger.items;
    if (items.hasInStates(fp, ['active', 'submitting', 'uploading'])) return false;
    if (this.ctx.control.noCreates) return true;
    if (items.hasInStates(fp, ['queued', 'uploaded'])) return false;
    const gate = this.ctx.guards;
    // Photos still to come from the run's producer (its discovery, a followed folder) are
    // waited for, unless no new photo may start any more (the cap is full).
    return gate?.onlyTaken || (!items.hasUnclaimed() && ((this.ctx.supply?.done ?? true) || (gate?.full() ?? false)));
  }

  /** The action due now, if any; `slotBlocked`: a create was due but every slot is taken. */
  pick(now: number): { action: Action | undefined; slotBlocked: boolean } {
    if (this.ctx.control.stopped) return { action: undefined, slotBlocked: false };
    const fp = this.ctx.keyFp;
    const items = this.ctx.ledger.items;
    const inflight = this.state.inflightItems;
    const poll = items.nextInState('active', fp, now, inflight);
    if (poll) return { action: { kind: 'poll', item: poll }, slotBlocked: false };
    if (this.ctx.control.noCreates) return { action: undefined, slotBlocked: false };
    let slotBlocked = false;
    const free = this.freeSlots();
    const create = this.createCandidate(now, free);
    if (create) return { action: create, slotBlocked };
    if ((free === 0 || this.slotWaiting(now)) && items.hasDue('uploaded', fp, now, this.notCreatable())) slotBlocked = true;
    if (this.uploadWanted(free)) {
      const gate = this.ctx.guards;
      // Past the photo cap only the photos this lane already took (claimed) are taken up again.
      const notNow = this.notUploadable();
      const upload = gate?.onlyTaken ? items.nextInState('queued', fp, now, notNow) : items.nextToUpload(fp, now, notNow);
      if (upload && (gate?.mayTake(upload) ?? true) && items.claimQueued(upload.id, fp))
        return { action: { kind: 'upload', item: { ...upload, key_fp: fp } }, slotBlocked };
    }
    const early = this.pollAhead(now);
    if (early) return { action: early, slotBlocked };
    return { action: undefined, slotBlocked };
  }

  /**
   * A create, if one is due: into a free slot, or a probe (`free`: the free slots, when the
   * caller has counted them). None while a 429 on api_key_active_tasks is waited out (SlotWait).
   *
   * A probe asks the service instead of waiting: when every slot left is counted busy only
   * by rows no live process tracks (held creates, whose task may run or may have ended long
   * ago; a gone run's), the next photo's create goes anyway. Accepted, that slot was free
   * and a guessed row is released (KeySlots.createResolved); refused (429, no credit), the
   * lane waits (SlotWait). Never beside slots this run or another live one fills with tasks
   * it tracks (KeyBudget.reserve checks it again), and one at a time.
   */
  createCandidate(now: number, free = this.freeSlots()): Action | undefined {
    if (this.ctx.control.stopped || this.ctx.control.noCreates || this.slotWaiting(now)) return undefined;
    const probe = free === 0 && this.mayProbe(now);
    if (free === 0 && !probe) return undefined;
    const item = this.ctx.ledger.items.nextInState('uploaded', this.ctx.keyFp, now, this.notCreatable());
    if (item && this.ctx.guards && !this.ctx.guards.mayCreate(item)) return undefined;
    return item ? { kind: 'create', item, ...(probe ? { probe } : {}) } : undefined;
  }

  /** Photos not uploaded now: those with a call in flight, and those whose file waits for the discovery (run/supply.ts). */
  private notUploadable(): ReadonlySet<number> {
    const waiting = this.ctx.supply?.waiting;
    return waiting && waiting.size > 0 ? new Set([...this.state.inflightItems, ...waiting]) : this.state.inflightItems;
  }

  /** Photos no create is made for now: those with a call in flight, and those the spending guards passed over. */
  private notCreatable(): ReadonlySet<number> {
    const over = this.ctx.guards?.passedOver;
    return over && over.size > 0 ? new Set([...this.state.inflightItems, ...over]) : this.state.inflightItems;
  }

  /** A 429 on api_key_active_tasks is being waited out (SlotWait). */
  private slotWaiting(now: number): boolean {
    return now < this.state.slotWait.untilMs;
  }

  /**
   * The slots left are busy only by guessed rows (KeySlots.guessed), the oldest of their
   * tasks has likely ended (probeAt), and no probe is in flight.
   */
  private mayProbe(now: number): boolean {
    if (this.state.probing) return false;
    const certain = this.ctx.budget.slots.certainInUse(now);
    return (
      certain < this.state.slotLimit &&
      this.ctx.budget.slots.inUse(now) > certain &&
      now >= this.probeAt(now) &&
      now >= this.state.slotWait.probeUntilMs
    );
  }

  /**
   * When a probe is worth its call: once the oldest guessed task has had the learned task
   * latency (15 s before any is known) to end since it could have started. A create held a
   * moment ago is running still, most likely; one held before a crash an hour ago is not.
   */
  private probeAt(now: number): number {
    const oldest = this.ctx.budget.slots.guessed(now).oldestSinceMs;
    return oldest === Infinity ? Infinity : oldest + (this.learnedLatencyMs() ?? FIRST_PROBE_AFTER_MS);
  }

  /**
   * The earliest time something may become actionable without another event. Work that
   * waits for a slot or for the just-in-time rule is left out: a finished call wakes the
   * loop for that, and counting it here would spin.
   */
  nextDue(): number {
    const fp = this.ctx.keyFp;
    const items = this.ctx.ledger.items;
    const inflight = this.state.inflightItems;
    const poll = items.earliestDue('active', fp, inflight);
    const dues = [poll];
    if (!this.ctx.control.noCreates && !this.ctx.control.stopped) {
      const now = clock.now();
      const free = this.freeSlots();
      const waitEnd = this.slotWaiting(now) ? this.state.slotWait.untilMs : now;
      const createDue = () => {
        const due = items.earliestDue('uploaded', fp, this.notCreatable());
        return due === undefined ? undefined : Math.max(due, waitEnd);
      };
      if (free > 0 || this.mayProbe(now)) dues.push(createDue());
      // Waiting for a slot that no event of this run will free (a held create expiring,
      // another process's task): wake when it may have changed, or when a probe may go.
      else if (items.hasInStates(fp, ['uploaded'])) {
        dues.push(this.ctx.budget.slots.nextChangeAt(now));
        const probe = Math.max(this.probeAt(now), this.state.slotWait.probeUntilMs);
        if (probe > now && probe < Infinity) dues.push(Math.max(probe, waitEnd));
      }
      const upload = items.earliestDue('queued', fp, this.notUploadable(), this.ctx.guards?.onlyTaken);
      if (this.uploadWanted(free)) dues.push(upload);
      else if (upload !== undefined) dues.push(this.uploadAheadAt(free));
      if (this.ctx.budget.windows.pacing && poll !== undefined) {
        const full = this.ctx.budget.windows.bucketFullAt(clock.now());
        dues.push(full > clock.now() ? full : clock.now() + POLL_AHEAD_RECHECK_MS);
      }
    }
    const known = dues.filter((d): d is number => d !== undefined);
    return known.length > 0 ? Math.max(clock.now() + 1, Math.min(...known)) : Infinity;
  }

  /** When the next poll of a task falls due, if one is waiting. */
  nextPollDue(): number | undefined {
    return this.ctx.ledger.items.earliestDue('active', this.ctx.keyFp, this.state.inflightItems);
  }

  /**
   * Just in time: another upload only while fewer photos wait for a create than free slots
   * plus one — plus UPLOADS_AHEAD while the hour does not pace the key, or while it does
   * but the pacing bucket is full (a call not made now is lost to the hour for good).
   */
  private uploadWanted(free: number): boolean {
    const waiting = this.waitingForCreate();
    if (waiting < free + 1) return true;
    return (
      waiting < free + 1 + UPLOADS_AHEAD &&
      (!this.ctx.budget.windows.pacing || this.ctx.budget.windows.bucketFullAt(clock.now()) <= clock.now())
    );
  }

  /** Paced, with room for an upload ahead: when the bucket fills, one is wanted (uploadWanted). */
  private uploadAheadAt(free: number): number | undefined {
    return this.ctx.budget.windows.pacing && this.waitingForCreate() < free + 1 + UPLOADS_AHEAD
      ? this.ctx.budget.windows.bucketFullAt(clock.now())
      : undefined;
  }

  /**
   * Paced, with the bucket full, every moment without a call loses one to the hour for
   * good (CallBudget.bucketFullAt). Such a call is spent on the task most likely to have
   * ended since a poll last saw it running, when that is likely (POLL_AHEAD_CHANCE): a task
   * that ended unseen holds its slot while the hour's calls go unused (long-percap, seed 1:
   * 302 of the run's 316 s of full bucket had such a task).
   */
  private pollAhead(now: number): Action | undefined {
    if (!this.ctx.budget.windows.pacing || this.ctx.budget.windows.bucketFullAt(now) > now) return undefined;
    let best: { item: ItemRow; chance: number } | undefined;
    for (const item of this.ctx.ledger.items.inStateFor('active', this.ctx.keyFp)) {
      if (this.state.inflightItems.has(item.id)) continue;
      const chance = this.endedChance(item, now);
      if (chance > POLL_AHEAD_CHANCE && chance > (best?.chance ?? 0)) best = { item, chance };
    }
    return best && { kind: 'poll', item: best.item };
  }

  /** The chance that an active photo's task has ended by now since a poll last saw it running (0 when unknown). */
  endedChance(item: ItemRow, now: number): number {
    const capability = this.ctx.config.steps[item.step_index]?.capability;
    if (item.task_started_ms === null || capability === undefined) return 0;
    const tasks = this.ctx.ledger.tasks;
    const started = item.task_started_ms;
    const running = (tasks.lastSeenRunning(item) ?? started) - started;
    return this.ctx.polling.endedChance(capability, tasks.waitHintOfCurrent(item), running, now - started);
  }

  /** The task latency this run has learned, else the ledger's recent tasks' (a resumed run), else null: how long a held slot's task may take. */
  learnedLatencyMs(): number | null {
    const { polling, config, ledger } = this.ctx;
    return polling.latency.learnedMs(config.steps, () => ledger.keyFacts.typicalRecentLatencyMs());
  }

  private waitingForCreate(): number {
    return this.ctx.ledger.items.countInStates(this.ctx.keyFp, ['uploaded']) + this.state.uploadsInflight;
  }

  /**
   * Slots of the key free for a create: the key's limit less every slot counted in its
   * machine-wide store (this run's creates and tasks, other processes', held creates).
   */
  freeSlots(now = clock.now()): number {
    return Math.max(0, this.state.slotLimit - this.ctx.budget.slots.inUse(now));
  }
}
