/*
 * Over 300 lines on purpose: runJob is one run from start to end (lock, recovery, discovery,
 * lanes, downloader, stops, summary), and the order of those phases is the design; its
 * helpers live beside it (credits.ts, keys.ts, guards.ts, events.ts).
 */
import { setMaxListeners } from 'node:events';
import path from 'node:path';
import { ApiClient, type CallRecord, type Transport } from '../api/index.js';
import { clock } from '../clock.js';
import type { Config, ResolvedKey } from '../config/index.js';
import type { Ledger, LedgerStatus, RecoveryReport, Rescue } from '../ledger/index.js';
import { LOG_ONLY, type Logger } from '../log.js';
import type { KeyBudget } from '../scheduler/keyBudget.js';
import type { Reservation } from '../scheduler/reservation.js';
import { creditsShortfall, readUsedCredit, type CreditsShortfall } from './credits.js';
import { skipSameFile } from '../inputs/sameFile.js';
import { Lane } from '../scheduler/lane.js';
import type { LaneStages } from '../scheduler/laneTypes.js';
import { Notifier } from '../scheduler/notifier.js';
import { LatencyModel } from '../scheduler/latency.js';
import { PollPlanner } from '../scheduler/polling.js';
import { sweepTempFiles } from '../outputs/atomic.js';
import { haltRun, stopForAccount, type AccountStop, type RunHalt, type RunState, type StageContext } from '../stages/context.js';
import { createStage } from '../stages/create.js';
import { discoverInto } from '../inputs/discover.js';
import { checkOutputSpace, probeOutputFolder } from '../outputs/diskcheck.js';
import { downloadLoop, Patience } from '../stages/downloader.js';
import { PhotoEventFeed, summaryEvent, type RunEvent, type RunSummary } from './events.js';
import { Guards, type GuardLimits, type GuardTrip } from './guards.js';
import { stopForConfig } from '../stages/configStop.js';
import { openKeyBudgets, seedFromUsage, watchShare, type KeyStoreOptions } from './keys.js';
import { ledgerGuard } from './ledgerGuard.js';
import type { OutputFs } from '../outputs/outputfs.js';
import { DARKROOM_AGENT } from '../metadata/agent.js';
import { MetadataWriter } from '../metadata/writer.js';
import type { MetadataOptions } from '../outputs/metadata.js';
import { pollStage } from '../stages/poll.js';
import type { ResultFetch } from '../stages/result.js';
import { ServiceContact } from './serviceContact.js';
import { retireStaleOutputs } from '../outputs/staleOutputs.js';
import { checkSteps, stampNewPhotos, type StepsChange, type StepsCheck } from './stepsCheck.js';
import { uploadStage } from '../stages/upload.js';
import { warnNetworkFs } from './networkFs.js';
import { ExifToolUnavailable, EXIT, type ExitCode } from '../errors.js';

/**
 * What every run is given by whoever starts it, the same from `run()` and `darkroom run`
 * down to here: the public `RunOptions` (lib/run.ts) and the session's options
 * (lib/session.ts) extend it.
 */
export interface RunHooks {
  /**
   * Aborting it stops the run: no new call is started, calls in flight get 2 s to finish
   * and are then aborted with their outcome recorded, and `run()` resolves within seconds
   * with the figures so far (`interrupted: true`, `pending` > 0). The ledger stays
   * consistent; a later `run()` continues where this one stopped. Any number of runs may
   * share one signal: a run adds no listener to it.
   */
  readonly signal?: AbortSignal | undefined;
  /**
   * Each event of the run as it happens, the same as `darkroom run --json` writes: one per
   * photo that ends (`done`, `failed`, `held`, `skipped`), `limit`, and `summary` last.
   * Called synchronously: keep it quick.
   *
   * If it throws, darkroom never lets the exception escape (no unhandled rejection, no
   * uncaught exception): its first throw stops the run as aborting `signal` would — nothing
   * new is started, the calls in flight finish and are recorded, the ledger stays
   * consistent — no further event reaches it, and `run()` rejects with a `RunStoppedError`
   * of code `EVENT_HANDLER`: its `cause` is what the handler threw, its `summary` the
   * figures when the run stopped (a throw on `summary` itself: the run's own figures). A
   * later `run()` continues where this one stopped.
   */
  readonly onEvent?: ((e: RunEvent) => void) | undefined;
}

/** The runner's options: the job resolved, the caller's hooks, and what the session opened (the ledger, the logger). */
export interface RunnerOptions extends RunHooks, KeyStoreOptions {
  readonly config: Config;
  readonly baseUrl: string;
  readonly keys: readonly ResolvedKey[];
  readonly ledger: Ledger;
  readonly log: Logger;
  /** The in-process simulator's transport for deterministic simulations; undici otherwise. */
  readonly transport?: Transport | undefined;
  readonly random?: () => number;
  /** Called after every finished action (rate-limited by the caller if it draws). */
  readonly onActivity?: (() => void) | undefined;
  /**
   * `--redo-steps`: photos started under other steps than the job's are redone from the first
   * step (stepsCheck.ts); without it such a run refuses before any call (exit 2).
   */
  readonly redoSteps?: boolean | undefined;
  /** Spending guards (--max-photos, --max-credits / limits.maxCredits, --max-duration, --until): see guards.ts. */
  readonly guards?: GuardLimits | undefined;
  /** The environment perl is looked for in (its PATH), for ExifTool; the process's by default. */
  readonly env?: NodeJS.ProcessEnv | undefined;
  /** How result URLs are fetched (the in-process simulator's, in simulations). */
  readonly resultFetch?: ResultFetch;
  /**
   * After `signal` aborts, how long calls and downloads in flight may take to finish
   * before they are aborted too (their outcome is recorded either way). Default 2000 ms,
   * so an interrupted run exits well within 5 s.
   */
  readonly graceMs?: number;
  /** The file-system calls that write outputs (src/outputs/outputfs.ts); tests inject a full or read-only disk. */
  readonly outputFs?: OutputFs;
  /**
   * Whether the service answers (serviceContact.ts): the caller's, to show an outage's
   * countdown; the runner makes its own otherwise.
   */
  readonly serviceContact?: ServiceContact;
  /** How long the first contact may go unanswered before the run stops (exit 2); default 20 s. */
  readonly firstContactMs?: number;
  /**
   * ExifTool already started, for the outputs' metadata (a benchmark or a test running many
   * jobs): the run uses it and leaves it running. By default a run starts its own when the
   * job asks for metadata or XMP sidecars, and ends it.
   */
  readonly metadataWriter?: MetadataWriter;
}

export interface RunResult {
  readonly status: LedgerStatus;
  /** hidden: files left out for a name starting with a dot (input.hidden: false); gone: photos whose files disappeared. */
  readonly discovered: {
    readonly added: number;
    readonly known: number;
    readonly skipped: number;
    readonly hidden: number;
    readonly gone: number;
  };
  readonly recovered: RecoveryReport;
  readonly tempFilesSwept: number;
  readonly accountStop: AccountStop | undefined;
  /** Set when the run stopped for a config, disk or ledger problem (its line and exit code). */
  readonly halt: RunHalt | undefined;
  /** Set when the run stopped for insufficient credits (20601). */
  readonly credits?: CreditsShortfall;
  /** Set when photos were started under other steps than the job's: refused, redone or bound. */
  readonly stepsChange?: StepsChange;
  readonly interrupted: boolean;
  /** Set when a spending guard stopped the run (exit 4). */
  readonly guard?: GuardTrip;
  /** Credits this run spent as far as known, when a credit limit was set. */
  readonly creditsSpent?: number;
  /** 0 all done · 1 some failed, held or not yet downloaded · 2 config · 3 account problem · 4 a limit set · 130 interrupted. */
  readonly exitCode: ExitCode;
  /** The figures a caller is given (the library's `run()` resolves with them): the summary event's. */
  readonly summary: RunSummary;
  /** Set when the run stopped because its ledger was deleted: where what it held was saved (ledger/rescue.ts). */
  readonly rescue: Rescue | null;
}

/** One `darkroom run`: recover, discover, then drive every lane and the downloader to the end. */
export async function runJob(opts: RunnerOptions): Promise<RunResult> {
  const { config, ledger, log } = opts;
  // Before anything else: an output folder that cannot take a file stops the run with 0 calls.
  const outputProblem = probeOutputFolder(config.output.dir, opts.outputFs);
  const tempFilesSwept = outputProblem === null ? sweepTempFiles(config.output.dir) : 0;
  const recovered = ledger.recover();
  ledger.items.releaseQueuedClaims();
  // Before anything acts on an item's step: a photo started under other steps is never
  // finished under these.
  const steps = checkSteps(config, ledger, { redo: opts.redoSteps ?? false, keyFps: opts.keys.map((k) => k.fingerprint), log });
  if (!steps.proceed) {
    return ended(opts, refused(ledger, steps, recovered, tempFilesSwept));
  }
  // From here every photo that ends (discovery's skips included) is one event.
  const feed = opts.onEvent ? new PhotoEventFeed(ledger, config, opts.onEvent) : undefined;
  const run: RunState = { stopped: false, noCreates: false, accountStop: undefined, halt: undefined };
  // ExifTool, before any call: without it no output could carry its metadata (no perl, say).
  const tool = await startMetadata(config, opts, run, log);
  try {
    return await runStarted(opts, { outputProblem, tempFilesSwept, recovered, steps, feed, run, metadata: tool.options });
  } finally {
    await tool.end();
  }
}

interface Started {
  readonly outputProblem: string | null;
  readonly tempFilesSwept: number;
  readonly recovered: RecoveryReport;
  readonly steps: StepsCheck;
  readonly feed: PhotoEventFeed | undefined;
  readonly run: RunState;
  readonly metadata: MetadataOptions | undefined;
}

/** The run once its ledger is recovered, its steps checked and ExifTool started: discovery, lanes, downloads, the end. */
async function runStarted(opts: RunnerOptions, started: Started): Promise<RunResult> {
  const { config, ledger, log } = opts;
  const random = opts.random ?? Math.random;
  const { outputProblem, tempFilesSwept, recovered, steps, feed, run, metadata } = started;
  // Paid results not yet on disk (an earlier run's outage, full disk, a file in the way) come first.
  ledger.outputs.dueAllNow();
  // L2: ambiguous creates are resent only when an operator says so, here by the config.
  if (config.onAmbiguous === 'resubmit') {
    const ids = ledger.held.resubmittable(config.maxAttempts);
    const r = ledger.held.requeue(['ambiguous'], 'onAmbiguous: resubmit (a second charge is possible)', ids);
    if (r.recreated > 0) log.warn({ items: r.recreated }, 'onAmbiguous: resubmit: held creates sent to be created again');
  }
  // Files and URL list, identified by content and reconciled with the ledger.
  const { found, added, hidden, gone } =
    outputProblem === null
      ? await clock
          .hold(discoverInto(config, ledger, { keyFps: opts.keys.map((k) => k.fingerprint), log, adjust: skipSameFile, metadata }))
          .then((d) => ({ ...d, gone: d.identity.gone }))
      : { found: [], added: { added: 0, known: 0 }, hidden: 0, gone: 0 };
  stampNewPhotos(config, ledger);
  retireStaleOutputs(ledger, log);
  log.info({ found: found.length, ...added, recovered, tempFilesSwept }, 'run started');

  feed?.pull();
  // Each finished action: the events it made, then whoever draws.
  const onActivity = () => {
    feed?.pull();
    opts.onActivity?.();
  };
  // Room for the results still to come (outputs/diskcheck.ts), before the first upload.
  const diskProblem = outputProblem ?? checkOutputSpace(config.output.dir, ledger.outputs.spaceFacts(), config, opts.outputFs);
  if (diskProblem !== null) haltRun(run, { kind: 'disk', immediate: true, exitCode: EXIT.usage, message: diskProblem });
  // Aborts what is in flight once an interrupt's grace period is over.
  const hard = new AbortController();
  // Every call and download in flight listens to it (clock.deadline): with several keys that
  // is more than the default 10, which would print a leak warning that is not one.
  setMaxListeners(1000, hard.signal);
  // Ends what watches the keys while the lanes run (watchShare).
  const lanesOver = new AbortController();
  let graceTimer: ReturnType<typeof clock.setTimer> | undefined;

  const latency = new LatencyModel();
  // Read at each pick while slots are guessed busy: worked out again at most every 5 s.
  let learnedAt = { at: Number.NEGATIVE_INFINITY, ms: null as number | null };
  const learned = () => {
    const t = clock.now();
    if (t < learnedAt.at || t - learnedAt.at >= 5_000) learnedAt = { at: t, ms: learnedLatencyMs(latency, config, ledger) };
    return learnedAt.ms;
  };
  const activity = new Notifier();
  // Checked before every call and download: a ledger moved, replaced or deleted stops the run.
  const ledgerOk = ledgerGuard(ledger, run, log, () => {
    for (const lane of lanes) lane.wake();
    activity.notify();
  });
  const contact = opts.serviceContact ?? new ServiceContact(random, log);
  const guards = opts.guards
    ? new Guards(opts.guards, {
        ledger,
        config,
        run,
        log,
        wake: () => {
          for (const lane of lanes) lane.wake();
          activity.notify();
        },
        onTrip: (trip) => opts.onEvent?.({ type: 'limit', guard: trip.guard, message: trip.message, atMs: clock.now() }),
        readUsedCredit: () => readUsedCredit(clients[0], budgets[0], hard.signal, log),
      })
    : undefined;
  const clients: ApiClient[] = [];
  // Each key's machine-wide budget, its rows reconciled with this ledger.
  const keyBudgets = openKeyBudgets(ledger, config, opts.keys, opts);
  for (const fs of keyBudgets.networkFs) warnNetworkFs(log, "keys' store (DARKROOM_STATE_DIR)", fs);
  const budgets: KeyBudget[] = [];
  const lanes: Lane[] = opts.keys.map((k) => {
    const client = new ApiClient({
      baseUrl: opts.baseUrl,
      apiKey: k.key,
      keyEnv: k.env,
      timeoutMs: config.timeoutMs,
      ...(opts.transport ? { transport: opts.transport } : {}),
      onCall: (rec: CallRecord) => {
        logCall(ledger, log, k.fingerprint, rec);
        contact.observe(rec);
      },
    });
    clients.push(client);
    const polling = new PollPlanner(latency);
    const ctx: StageContext = { ledger, client, keyFp: k.fingerprint, config, run, polling, random, log, abort: hard.signal };
    // Each call goes out under its reservation in the key's budget.
    const under = (ticket: Reservation): StageContext => ({ ...ctx, client: client.withTicket(ticket) });
    // While the service is out, the lane waits for the next try (serviceContact.ts).
    const stages: LaneStages = {
      upload: (item, ticket) => (ledgerOk() ? uploadStage(under(ticket), item).then((fb) => contact.during(fb)) : Promise.resolve({})),
      create: (item, ticket, probe) =>
        ledgerOk() ? createStage(under(ticket), item, probe).then((fb) => contact.during(fb)) : Promise.resolve({}),
      poll: (item, ticket) => (ledgerOk() ? pollStage(under(ticket), item).then((fb) => contact.during(fb)) : Promise.resolve({})),
    };
    const budget = keyBudgets.byKey.get(k.fingerprint)!;
    budgets.push(budget);
    return new Lane(ledger, budget, stages, run, {
      keyFp: k.fingerprint,
      polling,
      stepCount: config.steps.length,
      capabilities: config.steps.map((s) => s.capability),
      laneCount: opts.keys.length,
      latencyScaleMs: () => Math.min(...config.steps.map((s) => latency.meanMs(s.capability))),
      learnedLatencyMs: learned,
      activeTasks: config.limits.activeTasks,
      onActivity: () => {
        guards?.settle();
        activity.notify();
        onActivity();
      },
      ...(guards ? { gate: guards } : {}),
    });
  });

  // A credit limit that cannot buy one photo starts nothing.
  guards?.checkAffordable();

  // An interrupt: no new calls or downloads at once; what is in flight gets the grace
  // period to finish, then is aborted (each stage records what the abort left behind).
  const onAbort = () => {
    run.stopped = true;
    for (const lane of lanes) lane.wake();
    activity.notify();
    graceTimer ??= clock.setTimer(() => hard.abort(new Error('interrupted')), opts.graceMs ?? 2000);
  };
  if (opts.signal?.aborted) onAbort();
  else opts.signal?.addEventListener('abort', onAbort, { once: true });

  // Downloads whose result URL expired hand their item back to be polled for a fresh one.
  // Lanes end when only downloads are left, so a hand-back after that runs them again.
  let handedBack = 0;
  const wakeLanes = () => {
    handedBack++;
    for (const lane of lanes) lane.wake();
  };
  let credits: CreditsShortfall | undefined;
  const patience = new Patience(config.limits.downloadPatienceMinutes * 60_000);
  const downloader = {
    ledger,
    config,
    log,
    random,
    abort: hard.signal,
    allowHttp: opts.baseUrl.startsWith('http:'),
    resultFetch: opts.resultFetch,
    fs: opts.outputFs,
    metadata,
    onActivity,
    wakeLanes: () => {
      for (const lane of lanes) lane.wake();
    },
    ledgerOk,
    // A photo redone under new steps: its files made under the old ones go once the new output is in (outputs/staleOutputs.ts).
    onDone: (itemId: number) => retireStaleOutputs(ledger, log, itemId),
  };
  try {
    // Before the key goes anywhere: the base URL must answer as the API (exit 2 if not).
    if (!run.stopped && opts.keys.some((k) => ledger.keyFacts.needsCalls(k.fingerprint))) {
      const wrong = await contact.firstContact(opts.baseUrl, {
        timeoutMs: config.timeoutMs,
        secrets: opts.keys.map((k) => k.key),
        // An interrupt ends the wait at once: nothing was sent with the key yet.
        signal: opts.signal ?? hard.signal,
        ...(opts.transport ? { transport: opts.transport } : {}),
        ...(opts.firstContactMs !== undefined ? { windowMs: opts.firstContactMs } : {}),
      });
      if (wrong !== null) {
        haltRun(run, { kind: 'config', code: wrong.code, immediate: true, exitCode: EXIT.usage, message: wrong.message });
        log.error({ baseUrl: new URL(opts.baseUrl).origin, ...LOG_ONLY }, wrong.message);
      }
    }
    // Not on a rerun with nothing to do: that makes no call at all.
    for (const [i, k] of opts.keys.entries()) {
      if (run.stopped || !ledger.keyFacts.needsCalls(k.fingerprint)) continue;
      const stop = await seedFromUsage(budgets[i]!, clients[i]!, hard.signal, random, log);
      if (stop?.kind === 'stop-config') stopForConfig({ run, log }, stop);
      else if (stop) stopForAccount({ run, log }, stop);
    }
    if (guards && !run.stopped) await guards.begin(opts.keys.some((k) => ledger.keyFacts.needsCalls(k.fingerprint)));
    // While a key is shared with other clients, its usage is read now and then (keys.ts).
    const watching = opts.keys.map((k, i) =>
      watchShare(budgets[i]!, clients[i]!, {
        signal: lanesOver.signal,
        random,
        log,
        needsCalls: () => !run.stopped && ledger.keyFacts.needsCalls(k.fingerprint),
        onStop: (err) => (err.kind === 'stop-config' ? stopForConfig({ run, log }, err) : stopForAccount({ run, log }, err)),
      }),
    );
    for (;;) {
      const before = handedBack;
      let lanesDone = false;
      const downloads = downloadLoop(downloader, run, activity, wakeLanes, () => lanesDone, patience);
      try {
        await Promise.all(lanes.map((l) => l.run()));
      } finally {
        lanesDone = true;
        activity.notify();
        await downloads;
      }
      if (run.stopped || lanes.some((l) => l.crash !== undefined) || handedBack === before) break;
    }
    lanesOver.abort();
    await Promise.all(watching);
    await guards?.end();
    guards?.finish();
    if (run.accountStop?.creditsOnly && !run.stopped)
      credits = await creditsShortfall(ledger, config, clients[0], budgets[0], hard.signal, log);
  } finally {
    lanesOver.abort();
    await guards?.end();
    if (graceTimer) clock.clearTimer(graceTimer);
    opts.signal?.removeEventListener('abort', onAbort);
    await Promise.all(clients.map((c) => c.close()));
    keyBudgets.close();
  }
  const crashed = lanes.find((l) => l.crash !== undefined)?.crash;
  if (crashed !== undefined) throw crashed;

  feed?.pull();
  const status = ledger.status();
  const interrupted = opts.signal?.aborted ?? false;
  // A limit reached once nothing was left to start stopped nothing: the run ends as it would have.
  const halt =
    run.halt?.kind === 'limit'
      ? status.pending === 0
        ? undefined
        : { ...run.halt, message: guards?.endMessage() ?? run.halt.message }
      : run.halt;
  const exitCode = interrupted
    ? EXIT.interrupted
    : halt
      ? halt.exitCode
      : run.accountStop
        ? EXIT.account
        : status.done === status.total
          ? EXIT.ok
          : EXIT.someFailed;
  log.info(
    {
      exitCode,
      guard: halt?.kind === 'limit' ? guards?.trip?.guard : undefined,
      done: status.done,
      failed: status.failed,
      held: status.held,
      pending: status.pending,
      paidNotDownloaded: status.paidNotDownloaded,
    },
    'run ended',
  );
  return ended(opts, {
    status,
    discovered: { ...added, skipped: found.filter((f) => f.skipReason).length, hidden, gone },
    recovered,
    tempFilesSwept,
    accountStop: run.accountStop,
    halt,
    ...(credits ? { credits } : {}),
    ...(steps.change ? { stepsChange: steps.change } : {}),
    interrupted,
    ...(halt?.kind === 'limit' && guards?.trip ? { guard: guards.trip } : {}),
    ...(guards?.limits.maxCredits !== undefined ? { creditsSpent: guards.creditsSpent() } : {}),
    exitCode,
  });
}

/** The run's end: its summary event sent, its figures and (a deleted ledger's) rescue added to the result. */
function ended(opts: RunnerOptions, r: Omit<RunResult, 'summary' | 'rescue'>): RunResult {
  const event = summaryEvent(r.status, r.exitCode, stoppedBy(r), r.creditsSpent ?? null, clock.now());
  const { type: _, ...figures } = event;
  const rescue = r.halt?.kind === 'ledger' ? opts.ledger.rescueIfDeleted() : null;
  opts.onEvent?.(event);
  return { ...r, summary: { ...figures, interrupted: opts.signal?.aborted ?? false }, rescue };
}

/**
 * ExifTool for the outputs' metadata and the XMP sidecars, started when the job asks for
 * either (a writer handed in is used as it is). When it cannot start, the run halts before
 * any call with one line saying why and what to do (exit 2).
 */
async function startMetadata(
  config: Config,
  opts: RunnerOptions,
  run: RunState,
  log: Logger,
): Promise<{ options: MetadataOptions | undefined; end: () => Promise<void> }> {
  const wanted = config.output.metadata !== 'none' || config.output.sidecar.xmp;
  const base = {
    level: config.output.metadata,
    xmpSidecar: config.output.sidecar.xmp,
    aiSystem: config.serviceName ?? 'unknown',
    agent: DARKROOM_AGENT,
  };
  if (!wanted) return { options: { ...base, writer: null }, end: async () => {} };
  if (opts.metadataWriter) return { options: { ...base, writer: opts.metadataWriter }, end: async () => {} };
  const writer = new MetadataWriter({ env: opts.env });
  try {
    const version = await writer.start();
    log.debug({ exiftool: version }, 'ExifTool started');
    return { options: { ...base, writer }, end: () => writer.end() };
  } catch (err) {
    await writer.end().catch(() => undefined);
    const message = metadataToolMessage(config, err);
    // In the log file; the operator's one line is the halt's `stopped:` (on stderr).
    log.info({ code: 'METADATA_TOOL' }, message);
    haltRun(run, { kind: 'config', code: 'METADATA_TOOL', immediate: true, exitCode: EXIT.usage, message });
    return { options: undefined, end: async () => {} };
  }
}

/** Why ExifTool cannot run, and the two ways on: install perl, or ask for nothing ExifTool writes. */
function metadataToolMessage(config: Config, err: unknown): string {
  const why = err instanceof Error ? err.message : String(err);
  const fix = err instanceof ExifToolUnavailable ? err.fix : 'install perl';
  const off = [
    config.output.metadata !== 'none' ? 'output.metadata: none' : null,
    config.output.sidecar.xmp ? 'output.sidecar without xmp' : null,
  ]
    .filter(Boolean)
    .join(' and ');
  return `cannot carry the photos' metadata: ${why}; ${fix}, or set ${off} in ${path.basename(config.file)} to write outputs without it; nothing was uploaded`;
}

/** Why the run stopped early, for the summary event; null when it ran to its end. */
function stoppedBy(r: Omit<RunResult, 'summary' | 'rescue'>): { kind: string; message: string } | null {
  if (r.interrupted) return { kind: 'interrupted', message: 'interrupted: run again to continue where this one stopped' };
  if (r.halt) return { kind: r.halt.kind, message: r.halt.message };
  if (r.accountStop) return { kind: 'account', message: r.accountStop.error.message };
  return null;
}

/** The run refused before any call: the job's steps changed under started photos (exit 2). */
function refused(
  ledger: Ledger,
  steps: StepsCheck,
  recovered: RecoveryReport,
  tempFilesSwept: number,
): Omit<RunResult, 'summary' | 'rescue'> {
  return {
    status: ledger.status(),
    discovered: { added: 0, known: 0, skipped: 0, hidden: 0, gone: 0 },
    recovered,
    tempFilesSwept,
    accountStop: undefined,
    halt: { kind: 'config', message: steps.message ?? "the job's steps changed", exitCode: EXIT.usage, immediate: true },
    ...(steps.change ? { stepsChange: steps.change } : {}),
    interrupted: false,
    exitCode: EXIT.usage,
  };
}

/**
 * The task latency learned so far (the shortest step's): this run's model once it has seen
 * tasks end, else the ledger's recent ones (a resumed run), else null.
 */
function learnedLatencyMs(latency: LatencyModel, config: Config, ledger: Ledger): number | null {
  const seen = config.steps.filter((s) => latency.samples(s.capability) > 0);
  if (seen.length > 0) return Math.min(...seen.map((s) => latency.meanMs(s.capability)));
  return ledger.keyFacts.typicalRecentLatencyMs();
}

function logCall(ledger: Ledger, log: Logger, keyFp: string, rec: CallRecord): void {
  ledger.calls.record(keyFp, rec);
  log.debug(
    {
      method: rec.method,
      path: rec.path,
      httpStatus: rec.httpStatus,
      code: rec.businessCode,
      requestId: rec.requestId,
      sentRequestId: rec.sentRequestId,
      ms: rec.durationMs,
      key: keyFp,
    },
    'call',
  );
}
