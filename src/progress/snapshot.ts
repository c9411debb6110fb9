import { phaseOf, TERMINAL, type LedgerStatus, type ProgressFacts } from '../ledger/index.js';
import { ASSUMED_LATENCY_MS, estimate, type Bound, type ModelLimits } from './model.js';

/**
 * What the live display, the minute line and `darkroom status` show, computed from the
 * ledger's facts alone (plus the job's steps and limits when the jobs file is at hand).
 */
export interface Progress extends Pick<LedgerStatus, 'total' | 'done' | 'failed' | 'skipped' | 'held' | 'pending' | 'problems'> {
  readonly atMs: number;
  readonly steps: readonly StepProgress[];
  readonly keys: readonly KeyProgress[];
  readonly limits: ModelLimits | null;
  readonly calls: { readonly total: number; readonly uploads: number; readonly tasks: number; readonly account: number };
  readonly throughput: Throughput;
  /** Calls per photo-step so far (creates and polls, FAIL retries included; uploads apart); null before any step ended. */
  readonly callsPerStep: number | null;
  readonly eta: Eta | null;
  /** Set by a live run while the service does not answer (run/serviceContact.ts): the countdown to its next try. */
  readonly service?: ServiceDown | null;
  /** Set by a live run while its discovery goes on (run/supply.ts): the total grows as it finds photos. */
  readonly discovery?: { readonly found: number } | null;
  /** A run following its input folder (`run --follow`), while it does; null otherwise. */
  readonly following: FollowView | null;
}

/** "following since 08:02 · last new photo 10:41 · 3 settling" (ledger/follow.ts). */
export interface FollowView {
  /** How new files are noticed: the file system's events, or a scan every `pollMs`. */
  readonly how: 'events' | 'poll';
  readonly pollMs: number;
  readonly sinceMs: number;
  /** The latest photo recorded while following; null before any. */
  readonly lastNewMs: number | null;
  /** Files seen and not yet taken: still changing, or not decoding yet. */
  readonly settling: number;
}

export interface ServiceDown {
  /** When the first unanswered call was sent (ms since the epoch). */
  readonly sinceMs: number;
  readonly nextTryAtMs: number;
}

export interface StepProgress {
  /** 0-based, as in the ledger; shown 1-based. */
  readonly index: number;
  readonly capability: string | null;
  /** Photos past this step (its task succeeded). */
  readonly done: number;
  /** Photos that go through the steps (skipped inputs do not). */
  readonly total: number;
  /** Photos whose task for this step is running (or its create in flight). */
  readonly running: number;
}

export interface KeyProgress {
  /** The key's fingerprint `k_…`; never the key. */
  readonly key: string;
  /** Task slots in use: active tasks plus creates in flight. */
  readonly tasks: number;
  readonly lastMinute: number;
  readonly lastHour: number;
  /** Slots the key's store counts busy that no live run tracks; null when none (or the store is not at hand). */
  readonly guessed: GuessedSlotsView | null;
  /** The key's whole use on this machine's store (other jobs, other clients); null when the store is not at hand. */
  readonly use: KeyUseView | null;
}

/**
 * A key's whole use, from its store on this machine: the calls of every darkroom process
 * using it and of the other clients the service's usage showed, and the task slots other
 * live darkroom jobs fill. The ledger counts only its own job's.
 */
export interface KeyUseView {
  /** Calls in the key's rolling minute and hour, everyone's. */
  readonly minute: number;
  readonly hour: number;
  /** Of them, not this job's: other darkroom jobs or commands, other clients of the key. */
  readonly othersMinute: number;
  readonly othersHour: number;
  /** When the oldest call of the minute and of the hour leaves its window; null when the window is empty. */
  readonly minuteFreesMs: number | null;
  readonly hourFreesMs: number | null;
  /** Task slots other live darkroom jobs fill now. */
  readonly otherTasks: number;
}

/**
 * Task slots a key's store (on this machine) counts busy that no live run tracks: creates
 * whose answer was lost (held) and the creates and tasks of a run that stopped. Each counts
 * until its task could have ended at most (`untilMs`), unless a create the service accepts
 * beside them shows it free sooner (a run asks, scheduler/lane/queues.ts), or `darkroom
 * retry --held` frees it.
 */
export interface GuessedSlotsView {
  readonly held: number;
  readonly deadRun: number;
  /** Of deadRun: a stopped run's tasks, which the next run polls (its creates in flight are the rest). */
  readonly deadTasks: number;
  readonly untilMs: number;
}

export interface Throughput {
  /** The window the rates are measured over, ms (at most 15 minutes, from the first call in it). */
  readonly windowMs: number;
  readonly photosDone: number;
  readonly photosPerMinute: number;
  readonly callsPerMinute: number;
}

export interface Eta {
  /** Shortest time left under the limits, from the budget model. */
  readonly ms: number;
  readonly binds: Bound;
  readonly hourMs: number;
  readonly minuteMs: number;
  readonly slotsMs: number;
  /** Calls the work left needs, all keys together. */
  readonly remainingCalls: number;
  /** 'observed': calls per step and latencies measured in this ledger; 'assumed': not enough finished yet. */
  readonly basis: 'observed' | 'assumed';
  /** Photos whose last task succeeded and whose result is still to be downloaded (no API calls). */
  readonly downloadsLeft: number;
}

export interface ProgressContext {
  readonly now: number;
  /** The job's steps, when the jobs file is known; otherwise the ledger's own record of them. */
  readonly steps?: readonly { readonly capability: string }[] | undefined;
  readonly limits?: ModelLimits | undefined;
  /** Fingerprints of the job's keys, listed even before they made a call. */
  readonly keys?: readonly string[] | undefined;
  /** Per key fingerprint: the slots its store counts busy that no live run tracks (read apart, from the key's store). */
  readonly guessedSlots?: Readonly<Record<string, GuessedSlotsView>> | undefined;
  /** Per key fingerprint: its whole use (read apart, from the key's store). */
  readonly keyUse?: Readonly<Record<string, KeyUseView>> | undefined;
  /** The run following the input folder, while it does (ProgressReader.following). */
  readonly following?: FollowView | undefined;
}

/** How soon the oldest call of the busiest key's hour leaves it, when its store was read. */
function hourFreesIn(keys: readonly KeyProgress[], now: number): number | undefined {
  const busiest = [...keys].sort((a, b) => (b.use?.hour ?? b.lastHour) - (a.use?.hour ?? a.lastHour))[0];
  const at = busiest?.use?.hourFreesMs;
  return at === null || at === undefined ? undefined : at - now;
}

/** Creates and polls a step costs at least: one each (docs/ARCHITECTURE.md § Performance model: C* = N·(u + Σ 2·a_s)). */
const MIN_CALLS_PER_STEP = 2;
/** Steps finished before the measured calls per step replace the minimum. */
const OBSERVED_AFTER = 3;

export function buildProgress(f: ProgressFacts, ctx: ProgressContext): Progress {
  const s = f.status;
  // The ledger's own account of the pipeline (status.steps: the steps the last run recorded) when no jobs file is named.
  const ledgerSteps = s.steps ?? [];
  const stepCount = ctx.steps?.length ?? ledgerSteps.length;
  const capabilityOf = (i: number) => ctx.steps?.[i]?.capability ?? ledgerSteps[i]?.capability ?? null;

  // Per step: photos past it, and photos on it with a task running (as status.steps counts them).
  const through = s.total;
  const steps: StepProgress[] = Array.from({ length: stepCount }, (_, i) => ({
    index: i,
    capability: capabilityOf(i),
    done: ledgerSteps[i]?.done ?? 0,
    total: through,
    running: ledgerSteps[i]?.running ?? 0,
  }));

  // Keys: the job's, then any other the ledger has seen in the last hour or with tasks.
  const fps = new Set<string>([...(ctx.keys ?? []), ...Object.keys(s.calls.perKey), ...Object.keys(f.slots)]);
  const keys: KeyProgress[] = [...fps].map((key) => {
    const slot = f.slots[key];
    const w = s.calls.perKey[key];
    const g = ctx.guessedSlots?.[key];
    const guessed = g && g.held + g.deadRun > 0 && g.untilMs > ctx.now ? g : null;
    return {
      key,
      tasks: (slot?.active ?? 0) + (slot?.submitting ?? 0),
      lastMinute: w?.lastMinute ?? 0,
      lastHour: w?.lastHour ?? 0,
      guessed,
      use: ctx.keyUse?.[key] ?? null,
    };
  });

  // Throughput over the recent window, from its first call (a run that began 2 min ago is not diluted over 15).
  const from = f.recent.firstCallMs === null ? ctx.now : Math.max(f.recent.sinceMs, f.recent.firstCallMs);
  const windowMs = Math.max(0, ctx.now - from);
  // At least a minute: 7 calls in the first 2 s are not "210 calls/min".
  const perMin = (n: number) => (windowMs > 0 ? (n * 60_000) / Math.max(60_000, windowMs) : 0);
  const throughput: Throughput = {
    windowMs,
    photosDone: f.recent.done,
    photosPerMinute: perMin(f.recent.done),
    callsPerMinute: perMin(f.recent.calls),
  };

  // Work left: uploads, step-tasks (a running one counts half), and their calls and task time.
  const { uploadsLeft, downloadsLeft, stepsLeft, stepsLeftAt } = workLeft(f, stepCount);
  const stepsDone = steps.reduce((a, st) => a + st.done, 0);
  const running = steps.reduce((a, st) => a + st.running, 0);
  const measured = stepsDone + running / 2;
  const callsPerStep = stepsDone > 0 ? f.callsByKind.task / measured : null;
  const observed = stepsDone >= OBSERVED_AFTER && callsPerStep !== null;
  const perStep = observed ? Math.max(MIN_CALLS_PER_STEP, callsPerStep) : MIN_CALLS_PER_STEP;
  const remainingCalls = uploadsLeft + stepsLeft * perStep;

  let taskMs = 0;
  let latencyObserved = true;
  for (let i = 0; i < stepCount; i++) {
    const cap = capabilityOf(i);
    const seen = f.latency.find((l) => l.capability === cap);
    const hint = f.waitHints.find((l) => l.capability === cap);
    if (!seen) latencyObserved = false;
    taskMs += stepsLeftAt[i]! * (seen?.meanMs ?? hint?.meanMs ?? ASSUMED_LATENCY_MS);
  }
  // Slots counted busy that no run tracks take their time until they are free, at most.
  for (const k of keys) if (k.guessed) taskMs += (k.guessed.held + k.guessed.deadRun) * (k.guessed.untilMs - ctx.now);
  // Slots another job fills are taken for about a task of ours each.
  const firstLatency = f.latency.find((l) => l.capability === capabilityOf(0))?.meanMs ?? ASSUMED_LATENCY_MS;
  for (const k of keys) if (k.use) taskMs += k.use.otherTasks * firstLatency;

  let eta: Eta | null = null;
  if (ctx.limits) {
    const laneCount = Math.max(1, ctx.keys?.length ?? keys.length);
    const e = estimate({
      keys: laneCount,
      limits: ctx.limits,
      calls: remainingCalls,
      taskMs,
      // The key's whole hour (other jobs' and clients' calls too), as the service counts it.
      usedHour: keys.map((k) => Math.max(k.lastHour, k.use?.hour ?? 0)),
      hourFreesInMs: hourFreesIn(keys, ctx.now),
    });
    eta = {
      ms: s.pending === 0 ? 0 : e.ms,
      binds: e.binds,
      hourMs: e.hourMs,
      minuteMs: e.minuteMs,
      slotsMs: e.slotsMs,
      remainingCalls: Math.round(remainingCalls),
      basis: observed && latencyObserved ? 'observed' : 'assumed',
      downloadsLeft,
    };
  }

  return {
    atMs: ctx.now,
    total: s.total,
    done: s.done,
    failed: s.failed,
    skipped: s.skipped,
    held: s.held,
    pending: s.pending,
    steps,
    keys,
    limits: ctx.limits
      ? { callsPerMinute: ctx.limits.callsPerMinute, callsPerHour: ctx.limits.callsPerHour, activeTasks: ctx.limits.activeTasks }
      : null,
    calls: { total: s.calls.total, uploads: f.callsByKind.upload, tasks: f.callsByKind.task, account: f.callsByKind.account },
    throughput,
    callsPerStep,
    eta,
    problems: s.problems,
    following: followView(ctx.following),
  };
}

/** The follow row as the display shows it (only its own fields), or null when no run follows. */
function followView(f: FollowView | undefined): FollowView | null {
  return f ? { how: f.how, pollMs: f.pollMs, sinceMs: f.sinceMs, lastNewMs: f.lastNewMs, settling: f.settling } : null;
}

/** The work left in the ledger's counts: uploads, results to download, and step-tasks per step (a running one counts half). */
function workLeft(f: ProgressFacts, stepCount: number) {
  let uploadsLeft = 0;
  let downloadsLeft = 0;
  let stepsLeft = 0;
  const stepsLeftAt = new Array<number>(stepCount).fill(0);
  for (const r of f.byStep) {
    // The words of src/ledger/transitions.ts: paid = its task succeeded, the result not yet written.
    const phase = phaseOf(r.state);
    if (phase === 'paid') downloadsLeft += r.n;
    if (TERMINAL.has(r.state) || phase === 'paid') continue;
    if (phase === 'upload') uploadsLeft += r.n;
    for (let i = r.step; i < stepCount; i++) {
      const share = i === r.step && r.state === 'active' ? 0.5 : 1;
      stepsLeftAt[i]! += share * r.n;
      stepsLeft += share * r.n;
    }
  }
  return { uploadsLeft, downloadsLeft, stepsLeft, stepsLeftAt };
}
