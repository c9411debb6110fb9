import { ApiClient, type CallRecord } from '../../api/index.js';
import type { ItemRow, Ledger } from '../../ledger/index.js';
import { LOG_ONLY, type Logger } from '../../log.js';
import type { Reservation } from '../../scheduler/budget/keyBudget.js';
import { Lane } from '../../scheduler/lane/lane.js';
import type { Feedback, LaneStages } from '../../scheduler/lane/types.js';
import { LatencyModel } from '../../scheduler/polling/latency.js';
import { PollPlanner } from '../../scheduler/polling/polling.js';
import type { KeyContext, RunContext } from '../context.js';
import { readUsedCredit } from '../credits.js';
import { Guards } from '../guards.js';
import { openKeyBudgets, seedFromUsage, watchShare } from '../keys.js';
import { warnNetworkFs } from '../networkFs.js';
import { createStage } from '../stages/create.js';
import { pollStage } from '../stages/poll.js';
import { guarded, type Stage } from '../stages/stage.js';
import { uploadStage } from '../stages/upload.js';
import { EXIT } from '../../errors.js';

/** The run's keys, connected: each key's part of the run and its lane, and what watches them while the lanes run. */
export interface Connected {
  /** By key, in the job's order: its context and its lane. */
  readonly keys: readonly { readonly ctx: KeyContext; readonly lane: Lane }[];
  readonly guards: Guards | undefined;
  /** While a key is shared with other clients, its usage is read now and then (keys.ts watchShare); ends with `lanesOver`. */
  readonly watching: readonly Promise<void>[];
  readonly lanesOver: AbortController;
  /** Everything connect opened, closed (the key stores this run opened, the clients, the guards' timers). */
  close(): Promise<void>;
}

/**
 * The third phase: each key's budget opened and reconciled with this ledger (keys.ts), its
 * client and lane made; the spending guards armed; then, when there is work needing calls,
 * the base URL checked to be the API before the key goes anywhere (serviceContact.ts) and
 * each key's usage read from the service (keys.ts seedFromUsage). The first calls of the run.
 */
export async function connect(ctx: RunContext): Promise<Connected> {
  const { ledger, log, control } = ctx;
  // Each key's machine-wide budget, its rows reconciled with this ledger.
  const budgets = openKeyBudgets(ctx);
  for (const fs of budgets.networkFs) warnNetworkFs(log, "keys' store (DARKROOM_STATE_DIR)", fs);
  const latency = new LatencyModel();
  const keyCtxs: KeyContext[] = ctx.keys.map((k) => ({
    ...ctx,
    keyFp: k.fingerprint,
    client: new ApiClient({
      baseUrl: ctx.baseUrl,
      apiKey: k.key,
      keyEnv: k.env,
      timeoutMs: ctx.config.timeoutMs,
      ...(ctx.request.seams?.transport ? { transport: ctx.request.seams.transport } : {}),
      onCall: (rec: CallRecord) => {
        logCall(ledger, log, k.fingerprint, rec);
        ctx.contact.observe(rec);
      },
    }),
    budget: budgets.byKey.get(k.fingerprint)!,
    polling: new PollPlanner(latency),
  }));
  const first = keyCtxs[0];
  const guards = ctx.request.guards
    ? new Guards(ctx.request.guards, {
        ledger,
        config: ctx.config,
        control,
        log,
        onTrip: (trip) => ctx.events.limit(trip),
        readUsedCredit: () => readUsedCredit(first?.client, first?.budget, control.abort, log),
      })
    : undefined;
  const keys = keyCtxs.map((k) => {
    const kctx: KeyContext = { ...k, guards };
    return { ctx: kctx, lane: new Lane(kctx, laneStages(kctx)) };
  });
  // A credit limit that cannot buy one photo starts nothing.
  guards?.checkAffordable();
  for (const { lane } of keys) control.onWake(() => lane.wake());
  control.onWake(() => ctx.events.notify());
  // Photos recorded by the discovery, and its end: the lanes look for work again, the downloader for its end.
  for (const { lane } of keys) ctx.supply.onMore(() => lane.wake());
  ctx.supply.onMore(() => ctx.events.notify());
  // An interrupt: no new calls or downloads at once; what is in flight gets the grace period.
  const unfollow = control.follow(ctx.request.signal);
  const lanesOver = new AbortController();
  const watching: Promise<void>[] = [];
  const close = async () => {
    lanesOver.abort();
    await guards?.end();
    control.end();
    unfollow();
    await Promise.all(keys.map((k) => k.ctx.client.close()));
    budgets.close();
  };
  try {
    await greet(
      ctx,
      keys.map((k) => k.ctx),
    );
    if (guards && !control.stopped) await guards.begin(ctx.keys.some((k) => needsCalls(ctx, k.fingerprint)));
    // While a key is shared with other clients, its usage is read now and then (keys.ts).
    for (const k of keys) watching.push(watchShare(k.ctx, lanesOver.signal));
  } catch (err) {
    await close();
    throw err;
  }
  return { keys, guards, watching, lanesOver, close };
}

/**
 * Before the key goes anywhere: the base URL must answer as the API (exit 2 if not); then
 * each key's usage from the service. Not on a rerun with nothing to do: that makes no call at all.
 */
async function greet(ctx: RunContext, keys: readonly KeyContext[]): Promise<void> {
  const { control, request } = ctx;
  if (!control.stopped && keys.some((k) => needsCalls(ctx, k.keyFp))) {
    const wrong = await ctx.contact.firstContact(ctx.baseUrl, {
      timeoutMs: ctx.config.timeoutMs,
      secrets: ctx.keys.map((k) => k.key),
      // An interrupt ends the wait at once: nothing was sent with the key yet.
      signal: request.signal ?? control.abort,
      ...(request.seams?.transport ? { transport: request.seams.transport } : {}),
      ...(request.seams?.firstContactMs !== undefined ? { windowMs: request.seams.firstContactMs } : {}),
    });
    if (wrong !== null) {
      control.stop({ kind: 'config', code: wrong.code, immediate: true, exitCode: EXIT.usage, message: wrong.message });
      ctx.log.error({ baseUrl: new URL(ctx.baseUrl).origin, ...LOG_ONLY }, wrong.message);
    }
  }
  for (const k of keys) {
    if (control.stopped || !needsCalls(ctx, k.keyFp)) continue;
    const stop = await seedFromUsage(k, control.abort);
    if (stop) control.stopFor(stop);
  }
}

/** Whether a key has work needing calls: in the ledger, or to come (a followed folder's new photos). */
function needsCalls(ctx: RunContext, keyFp: string): boolean {
  return ctx.request.follow === true || ctx.ledger.keyFacts.needsCalls(keyFp);
}

/** The lane's stages: each call under its reservation in the key's budget, through the one guard (stage.ts). */
function laneStages(key: KeyContext): LaneStages {
  // While the service is out, the lane waits for the next try (serviceContact.ts).
  const call = (stage: Stage<KeyContext, Feedback>) => {
    const run = guarded(stage, {}, (fb) => key.contact.during(fb));
    return (item: ItemRow, ticket: Reservation, probe = false) => run({ ...key, client: key.client.withTicket(ticket), probe }, item);
  };
  return { upload: call(uploadStage), create: call(createStage), poll: call(pollStage) };
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
