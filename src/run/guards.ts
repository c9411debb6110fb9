import { CAPABILITIES, isCapability } from '../api/index.js';
import { clock, type TimerHandle } from '../clock.js';
import type { Config } from '../config/index.js';
import { TERMINAL, type ItemRow, type Ledger } from '../ledger/index.js';
import type { Logger } from '../log.js';
import type { StartGate } from '../scheduler/lane/types.js';
import { formatDuration } from '../progress/model.js';
import type { RunControl } from './control.js';
import { EXIT } from '../errors.js';

/**
 * The spending guards an operator sets on one `darkroom run`. Each is
 * optional; unset, nothing is checked. All count from this invocation's start.
 */
export interface GuardLimits {
  /** `--max-photos N`: this run starts at most N photos that no run had started yet. */
  readonly maxPhotos?: number | undefined;
  /** `--max-credits N` (else `limits.maxCredits`): credits spent since this run began. */
  readonly maxCredits?: number | undefined;
  /** `--max-duration 6h`, in ms from the run's start. */
  readonly maxDurationMs?: number | undefined;
  /** `--until 07:00`: the local time as given, resolved to the next such moment at the start. */
  readonly until?: string | undefined;
  /** That moment, ms since the epoch. */
  readonly untilMs?: number | undefined;
}

export type GuardName = 'max-photos' | 'max-credits' | 'max-duration' | 'until';

/** Which guard stopped the run, and the line that says so. */
export interface GuardTrip {
  readonly guard: GuardName;
  /** After `stopped: `: one line naming the limit and what to do. */
  readonly message: string;
}

export interface GuardDeps {
  readonly ledger: Ledger;
  readonly config: Config;
  /** A guard that trips stops new work through it (RunControl.stop, which wakes the lanes). */
  readonly control: RunControl;
  readonly log: Logger;
  /** Told once, when a guard trips (the run's `limit` event). */
  readonly onTrip?: ((trip: GuardTrip) => void) | undefined;
  /**
   * GET /api/v1/credits through the key's call budget: the account's usedCredit, or null
   * when the call failed (the estimate from the ledger stands in until a read succeeds).
   */
  readonly readUsedCredit?: (() => Promise<number | null>) | undefined;
}

/**
 * How often the balance is read: every call counts against the key's windows, so at most
 * once a minute while creates are being made, every 10 s once the margin left is small (a
 * few creates' worth: the last ones are where another client's spending on the account
 * would make the run pass the limit), and never while nothing is created.
 */
const READ_EVERY_MS = 60_000;
const READ_NEAR_LIMIT_MS = 10_000;

/** A capability the spec and the job give no price for is counted at 1 credit (the least a task can cost). */
const ASSUMED_COST = 1;

/**
 * The guards of one run. The lanes ask `mayTake` before taking a photo from the queue and
 * `mayCreate` before each create; the time guards and the balance reader run on their own.
 * A time guard that trips stops new work the way a full disk does (RunControl.stop: no new upload or
 * create, the tasks already created polled and downloaded) with exit code 4. The photo cap
 * and the credit limit instead let the photos already started finish all their steps, and
 * only leave the rest queued: the credit limit buys whole photos, a photo's every step
 * reserved before its first create (a pipeline's first steps alone would be credits spent on
 * no output). Either way every photo left is still pending, and the next run continues it.
 */
export class Guards implements StartGate {
  private readonly startedMs = clock.now();
  /** Photos this run took from the queue as new starts. */
  private readonly taken = new Set<number>();
  private capReached = false;
  /** Photos whose remaining steps the credit limit has reserved (creditCommitted); pruned as they end. */
  private readonly admitted = new Set<number>();
  /** The credit limit could not buy another photo: no new photo is started. */
  private creditCap = false;
  /** Photos waiting for a create that the credit limit could not buy: the lanes pass over them. */
  readonly passedOver = new Set<number>();
  private readonly timers: TimerHandle[] = [];
  private tripped: GuardTrip | undefined;
  /** What the tripped guard's line names (stop); undefined when it tripped before any work. */
  private detail: string | undefined;
  /** Submissions up to this id belong to earlier runs. */
  private readonly submissionMark: number;
  private baselineUsed: number | null = null;
  /** Credits the account spent since the run began that were not this run's (another client on the account). */
  private others = 0;
  private lastReadEstimate = -1;
  private lastReadMs = Number.NEGATIVE_INFINITY;
  private readonly stopper = new AbortController();
  private watcher: Promise<void> | undefined;

  constructor(
    readonly limits: GuardLimits,
    private readonly deps: GuardDeps,
  ) {
    this.submissionMark = limits.maxCredits === undefined ? 0 : deps.ledger.spend.lastSubmissionId();
  }

  get onlyTaken(): boolean {
    return this.capReached || this.creditCap;
  }

  /** The guard that stopped the run, if one did. */
  get trip(): GuardTrip | undefined {
    return this.tripped;
  }

  /**
   * Credits spent since the run began as far as known: this run's creates that may be
   * charged (the ledger), plus what the balance shows was spent beyond them. The balance
   * alone lags (the service may charge a task when it ends) and the ledger alone misses
   * another client spending on the same account; together they never count low.
   */
  creditsSpent(): number {
    return this.estimate() + this.others;
  }

  /**
   * Arm the time guards; with a credit limit and work to do, read the balance once before
   * the first create (the baseline) and then keep reading it while the run goes.
   */
  async begin(hasWork: boolean): Promise<void> {
    const { maxDurationMs, untilMs, until } = this.limits;
    if (maxDurationMs !== undefined) {
      this.at(this.startedMs + maxDurationMs, 'max-duration', `--max-duration ${formatDuration(maxDurationMs)}`);
    }
    if (untilMs !== undefined) this.at(untilMs, 'until', `--until ${until ?? new Date(untilMs).toTimeString().slice(0, 5)}`);
    if (this.limits.maxCredits !== undefined && hasWork && this.deps.readUsedCredit) {
      await this.readBalance();
      this.watcher = this.watchBalance();
    }
  }

  /** The lanes are done: no more timers or reads. */
  async end(): Promise<void> {
    for (const t of this.timers) clock.clearTimer(t);
    this.timers.length = 0;
    this.stopper.abort();
    await this.watcher;
  }

  /**
   * At the end of the run: the photo cap or the credit limit left photos in the queue, so
   * the run stopped at a limit (exit 4), unless something else stopped it first.
   */
  finish(): void {
    if (this.tripped) return;
    if (this.capReached) this.stop('max-photos', `--max-photos ${this.limits.maxPhotos}: ${this.taken.size} new photo(s) started`);
    else if (this.creditCap) this.stopForCredits();
  }

  /**
   * Before any call: a credit limit no pending photo's steps fit in starts nothing (exit 4),
   * rather than spending on first steps whose later ones it could never pay.
   */
  checkAffordable(): void {
    const max = this.limits.maxCredits;
    if (max === undefined) return;
    const costs = this.deps.ledger.items
      .pendingSteps()
      .map((p) => this.stepsCost(p.step_index, p.state))
      .filter((c) => c > 0);
    if (costs.length === 0 || costs.some((c) => c <= max)) return;
    const full = this.stepsCost(0, 'queued');
    const least = Math.min(...costs);
    const parts = this.deps.config.steps.map((s) => `${s.capability} ${this.costOf(s.capability)}`).join(' + ');
    const what =
      least === full ? `one photo's steps cost (${full} credit(s): ${parts})` : `any photo left needs (${least} credit(s) at least)`;
    this.stop('max-credits', `--max-credits ${max} is less than ${what}; nothing was started`, true);
  }

  /**
   * After each finished action: once the credit limit could buy no more photos and the
   * photos it bought have had their last create, the photos it passed over (waiting for a
   * create) will never be taken: the run stops, so the lanes end with the paid work.
   */
  settle(): void {
    if (this.creditCap && this.passedOver.size > 0 && !this.tripped && this.reservedLeft() === 0) this.stopForCredits();
  }

  full(): boolean {
    const max = this.limits.maxPhotos;
    // The cap is full: the run ends with it (exit 4) once those photos are finished.
    if (max !== undefined && this.taken.size >= max) this.forgetSkipped();
    if (max !== undefined && this.taken.size >= max) this.capReached = true;
    return this.capReached || this.creditCap;
  }

  mayTake(item: ItemRow): boolean {
    return this.mayTakePhoto(item) && this.admit(item);
  }

  private mayTakePhoto(item: ItemRow): boolean {
    const max = this.limits.maxPhotos;
    if (max === undefined || this.taken.has(item.id)) return true;
    // A photo some run already sent to be created (a later step, a re-upload, a retry) is
    // continued, not started: the cap counts new photos.
    if (item.step_index > 0 || this.deps.ledger.spend.everSubmitted(item.id)) return true;
    if (this.taken.size >= max) this.forgetSkipped();
    if (this.taken.size >= max) {
      if (!this.capReached)
        this.deps.log.info({ maxPhotos: max }, 'photo cap reached: no new photos are started; those started are finished');
      this.capReached = true;
      return false;
    }
    this.taken.add(item.id);
    return true;
  }

  mayCreate(item: ItemRow): boolean {
    const max = this.limits.maxCredits;
    if (max === undefined) return true;
    if (this.tripped) return false;
    // A photo no step of which is reserved yet (a URL input, one an earlier run left half-way).
    if (!this.admitted.has(item.id) && !this.admit(item)) {
      this.passedOver.add(item.id);
      if (this.reservedLeft() === 0) this.stopForCredits();
      return false;
    }
    // Reserved: refused only when another client's spending on the account left no room.
    const capability = this.deps.config.steps[item.step_index]?.capability ?? '';
    const spent = this.creditsSpent();
    if (spent + this.costOf(capability) <= max) return true;
    this.stop('max-credits', `--max-credits ${max}: ${spent} credit(s) spent since the run began, the next create would pass it`);
    return false;
  }

  /**
   * The credit limit's say on a photo about to be started: its remaining steps are reserved
   * when they fit beside what was spent and what the photos already taken still need;
   * otherwise no new photo is started from now on (onlyTaken).
   */
  private admit(item: ItemRow): boolean {
    const max = this.limits.maxCredits;
    if (max === undefined || this.admitted.has(item.id)) return true;
    if (this.creditCap) return false;
    if (this.creditsSpent() + this.reservedLeft() + this.stepsCost(item.step_index, item.state) <= max) {
      this.admitted.add(item.id);
      return true;
    }
    this.creditCap = true;
    this.deps.log.info({ maxCredits: max }, 'credit limit reached: no new photos are started; those started are finished');
    return false;
  }

  /** Credits the photos taken still need for the creates not yet sent; photos that ended leave the reservation. */
  private reservedLeft(): number {
    let sum = 0;
    for (const id of this.admitted) {
      const row = this.deps.ledger.items.get(id);
      if (!row || TERMINAL.has(row.state)) this.admitted.delete(id);
      else sum += this.stepsCost(row.step_index, row.state);
    }
    return sum;
  }

  /**
   * Credits of the creates a photo still needs: one per step from its current one, less the
   * current step's once its create was sent (a create in flight may be charged: estimate()
   * counts it).
   */
  private stepsCost(step: number, state: ItemRow['state']): number {
    const from = state === 'queued' || state === 'uploading' || state === 'uploaded' ? step : step + 1;
    return this.deps.config.steps.slice(from).reduce((sum, s) => sum + this.costOf(s.capability), 0);
  }

  /** The credit limit bought what it could: the line says what it bought, from the ledger. */
  private stopForCredits(): void {
    const max = this.limits.maxCredits!;
    const photo = this.stepsCost(0, 'queued');
    this.stop('max-credits', `--max-credits ${max}: ${this.creditsSpent()} credit(s) spent, ${photo} credit(s) a photo`);
  }

  /** A photo refused at upload (bad input) cost nothing and is not one of the N. */
  private forgetSkipped(): void {
    for (const id of this.taken) if (this.deps.ledger.items.get(id)?.state === 'skipped') this.taken.delete(id);
  }

  /** Credits per create of a capability: the job's `credits:`, else the spec's price, else 1. */
  private costOf(capability: string): number {
    const fromJob = this.deps.config.credits[capability as keyof Config['credits']];
    if (fromJob !== undefined) return fromJob;
    return isCapability(capability) ? (CAPABILITIES[capability].credits ?? ASSUMED_COST) : ASSUMED_COST;
  }

  /** Creates of this run that may be charged, at their capability's price. */
  private estimate(): number {
    if (this.limits.maxCredits === undefined) return 0;
    let sum = 0;
    for (const [capability, n] of this.deps.ledger.spend.createsSince(this.submissionMark)) sum += n * this.costOf(capability);
    return sum;
  }

  private at(whenMs: number, guard: GuardName, label: string): void {
    const fire = () => this.stop(guard, label);
    if (whenMs <= clock.now()) fire();
    else this.timers.push(clock.setTimer(fire, whenMs - clock.now()));
  }

  /**
   * The guard trips: no new photo or create. `nothingStarted`: it tripped before any work
   * (checkAffordable); otherwise what became of the photos started is said at the run's end
   * (endMessage), from the ledger.
   */
  private stop(guard: GuardName, detail: string, nothingStarted = false): void {
    if (this.tripped) return;
    const message = `at a limit you set (${detail}); ${nothingStarted ? 'raise it to start' : 'run again to continue'}`;
    this.tripped = { guard, message };
    this.detail = nothingStarted ? undefined : detail;
    this.deps.control.stop({ kind: 'limit', message, exitCode: EXIT.limit, immediate: false });
    this.deps.log.warn({ guard }, `stopping at a limit you set (${detail}): no new photos or creates`);
    this.deps.onTrip?.(this.tripped);
  }

  /**
   * The `stopped:` line at the run's end: the limit, and what the ledger shows of the photos
   * started (a time limit can leave a pipeline's photo between two steps).
   */
  endMessage(): string | undefined {
    if (this.detail === undefined) return this.tripped?.message;
    const n = this.deps.ledger.items.countStartedUnfinished();
    const photos = n === 0 ? 'every photo started was finished' : `${n} photo(s) started are not finished yet`;
    return `at a limit you set (${this.detail}); ${photos}; run again to continue`;
  }

  private async readBalance(): Promise<void> {
    // Taken before the call: the balance can only include creates sent before it was read.
    const ours = this.estimate();
    const used = await this.deps.readUsedCredit!();
    this.lastReadEstimate = ours;
    this.lastReadMs = clock.now();
    if (used === null) return;
    if (this.baselineUsed === null) this.baselineUsed = used;
    const fell = used - this.baselineUsed;
    this.others = Math.max(this.others, fell - ours);
    const max = this.limits.maxCredits!;
    if (fell >= max) this.stop('max-credits', `--max-credits ${max}: the account's balance fell by ${fell} credit(s) since the run began`);
  }

  private async watchBalance(): Promise<void> {
    const max = this.limits.maxCredits!;
    while (!this.stopper.signal.aborted && !this.tripped) {
      try {
        await clock.sleep(READ_NEAR_LIMIT_MS, this.stopper.signal);
      } catch {
        return;
      }
      // Nothing created since the last read: the balance says nothing new about this run.
      if (this.estimate() === this.lastReadEstimate && this.baselineUsed !== null) continue;
      const near = max - this.creditsSpent() <= Math.max(3, max * 0.1);
      if (!near && clock.now() - this.lastReadMs < READ_EVERY_MS) continue;
      await this.readBalance();
    }
  }
}
