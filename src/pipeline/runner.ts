import { ApiClient, type CallRecord, type Transport } from '../api/index.js';
import { clock } from '../clock.js';
import type { Config, ResolvedKey } from '../config/index.js';
import type { Ledger, LedgerStatus, RecoveryReport } from '../ledger/index.js';
import type { Logger } from '../log.js';
import { ARRIVAL_MARGIN_MS, CallBudget } from '../scheduler/budget.js';
import { Lane, type LaneStages } from '../scheduler/lane.js';
import { Notifier } from '../scheduler/notifier.js';
import { LatencyModel } from '../scheduler/polling.js';
import type { AccountStop, RunState, StageContext } from './context.js';
import { createStage } from './create.js';
import { discover } from './discover.js';
import { downloadStage, sweepTempFiles, type ResultFetch } from './download.js';
import { pollStage } from './poll.js';
import { uploadStage } from './upload.js';

export interface RunOptions {
  readonly config: Config;
  readonly baseUrl: string;
  readonly keys: readonly ResolvedKey[];
  readonly ledger: Ledger;
  readonly log: Logger;
  /** The in-process simulator's transport for deterministic simulations; undici otherwise. */
  readonly transport?: Transport;
  readonly random?: () => number;
  /** Aborting stops new calls; in-flight ones finish with their outcome recorded. */
  readonly signal?: AbortSignal;
  /** Called after every finished action (rate-limited by the caller if it draws). */
  readonly onActivity?: () => void;
  /** How result URLs are fetched (the in-process simulator's, in simulations). */
  readonly resultFetch?: ResultFetch;
}

export interface RunResult {
  readonly status: LedgerStatus;
  readonly discovered: { readonly added: number; readonly known: number; readonly skipped: number };
  readonly recovered: RecoveryReport;
  readonly tempFilesSwept: number;
  readonly accountStop: AccountStop | undefined;
  readonly interrupted: boolean;
  /** DESIGN.md: 0 all done · 1 some failed or held · 3 account problem · 130 interrupted. */
  readonly exitCode: 0 | 1 | 3 | 130;
}

/** One `darkroom run`: recover, discover, then drive every lane and the downloader to the end. */
export async function runJob(opts: RunOptions): Promise<RunResult> {
  const { config, ledger, log } = opts;
  const random = opts.random ?? Math.random;
  const tempFilesSwept = sweepTempFiles(config.output.dir);
  const recovered = ledger.recover();
  const found = await clock.io(discover(config));
  const added = ledger.items.addDiscovered(found);
  log.info({ found: found.length, ...added, recovered, tempFilesSwept }, 'run started');

  const run: RunState = { stopped: false, noCreates: false, accountStop: undefined };
  const onAbort = () => {
    run.stopped = true;
    for (const lane of lanes) lane.wake();
    activity.notify();
  };
  opts.signal?.addEventListener('abort', onAbort, { once: true });

  const latency = new LatencyModel();
  const activity = new Notifier();
  const clients: ApiClient[] = [];
  const lanes: Lane[] = opts.keys.map((k) => {
    const client = new ApiClient({
      baseUrl: opts.baseUrl,
      apiKey: k.key,
      keyEnv: k.env,
      timeoutMs: config.timeoutMs,
      ...(opts.transport ? { transport: opts.transport } : {}),
      onCall: (rec: CallRecord) => logCall(ledger, log, k.fingerprint, rec),
    });
    clients.push(client);
    const ctx: StageContext = { ledger, client, keyFp: k.fingerprint, config, run, latency, random, log };
    const stages: LaneStages = {
      upload: (item) => uploadStage(ctx, item),
      create: (item) => createStage(ctx, item),
      poll: (item) => pollStage(ctx, item),
    };
    const now = clock.now();
    const budget = new CallBudget(config.limits, ledger.calls.timesSince(k.fingerprint, now - 3_600_000 - ARRIVAL_MARGIN_MS));
    return new Lane(ledger, budget, stages, run, {
      keyFp: k.fingerprint,
      activeTasks: config.limits.activeTasks,
      onActivity: () => {
        activity.notify();
        opts.onActivity?.();
      },
    });
  });

  let lanesDone = false;
  const downloads = downloadLoop(opts, random, activity, () => lanesDone || run.stopped);
  try {
    await Promise.all(lanes.map((l) => l.run()));
  } finally {
    lanesDone = true;
    activity.notify();
    await downloads;
    opts.signal?.removeEventListener('abort', onAbort);
    await Promise.all(clients.map((c) => c.close()));
  }
  const crashed = lanes.find((l) => l.crash !== undefined)?.crash;
  if (crashed !== undefined) throw crashed;

  const status = ledger.status();
  const interrupted = opts.signal?.aborted ?? false;
  const exitCode = interrupted ? 130 : run.accountStop ? 3 : status.done === status.total ? 0 : 1;
  log.info({ exitCode, done: status.done, failed: status.failed, held: status.held, pending: status.pending }, 'run ended');
  return {
    status,
    discovered: { ...added, skipped: found.filter((f) => f.skipReason).length },
    recovered,
    tempFilesSwept,
    accountStop: run.accountStop,
    interrupted,
    exitCode,
  };
}

function logCall(ledger: Ledger, log: Logger, keyFp: string, rec: CallRecord): void {
  ledger.calls.log({
    at_ms: rec.atMs,
    key_fp: keyFp,
    method: rec.method,
    endpoint: rec.endpoint,
    http_status: rec.httpStatus,
    code: rec.businessCode,
    request_id: rec.requestId,
    sent_request_id: rec.sentRequestId,
    duration_ms: rec.durationMs,
    error: rec.errorCode,
  });
  log.debug(
    { method: rec.method, path: rec.path, httpStatus: rec.httpStatus, code: rec.businessCode, requestId: rec.requestId, sentRequestId: rec.sentRequestId, ms: rec.durationMs, key: keyFp },
    'call',
  );
}

/** Downloads are not API calls: they run beside the lanes, a few at a time. */
async function downloadLoop(opts: RunOptions, random: () => number, activity: Notifier, producersDone: () => boolean): Promise<void> {
  const { ledger, config, log } = opts;
  const inflight = new Map<number, Promise<void>>();
  const dl = {
    outputDir: config.output.dir,
    allowHttp: opts.baseUrl.startsWith('http:'),
    deadlineMs: 5 * 60_000,
    maxRetries: 5,
    random,
    log,
    ...(opts.resultFetch ? { fetch: opts.resultFetch } : {}),
  };
  for (;;) {
    if (opts.signal?.aborted) break;
    const now = clock.now();
    while (inflight.size < config.limits.downloads) {
      const item = ledger.outputs.nextToDownload(now, new Set(inflight.keys()));
      if (!item) break;
      const p = downloadStage(ledger, item, dl).finally(() => {
        inflight.delete(item.id);
        activity.notify();
        opts.onActivity?.();
      });
      inflight.set(item.id, p);
    }
    const waiting = ledger.items.countInStates(null, ['succeeded']) - inflight.size;
    if (inflight.size === 0 && waiting <= 0 && producersDone()) break;
    const next = waiting > 0 ? ledger.outputs.earliestDue() : undefined;
    await activity.wait(next !== undefined && next > now ? next : Infinity);
  }
  await Promise.all(inflight.values());
}
