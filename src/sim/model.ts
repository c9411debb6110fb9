/**
 * The simulated image service: one model, pure of I/O except fetching external image URLs,
 * served over HTTP by server.ts and called in-process by deterministic simulations. This
 * file takes a call through the checks in order; its parts hold the rest, each in a file
 * named for it (docs/ARCHITECTURE.md § Parts), wired in parts.ts.
 *
 * Decisions where the spec is silent (the rest are in those files and params.ts,
 * processing.ts):
 * - Order of checks: key (401) → call-rate windows → active-task slots (creates only) →
 *   endpoint (404/-2 for an unknown path or method) → parameters (-2/-3) → subscription
 *   (24403) → image resolution (-2) → credits (20601).
 * - GET /__sim/audit answers the bare audit JSON (no envelope), needs no key, counts nowhere.
 * - In-process, every answer except one fetching an external URL is computed without
 *   waiting on I/O, so virtual time cannot move during a call.
 * - Injected faults (faults.ts) come after the key check, in this order: a 503 burst (before
 *   the limits), the real limits, a spurious 429; on a create, a 24403-in-200 at the
 *   subscription check; after the answer is computed (a create's task already exists), a
 *   dropped connection (creates only), a slow answer, a malformed body. A spurious 429
 *   counts in the windows like a real one (limits.ts); a 503 of a burst counts in none (the
 *   protective service in front answered, not the API). A poll may make its task vanish, a
 *   create the service's copy of its uploaded image (forgottenUpload: -2 from then on). A
 *   `redirect` (faults.ts) answers right after the key check, before everything else, and
 *   counts in no window.
 *   The result origin may answer an expired URL or a truncated body. /__sim/audit and 401s
 *   are never faulted.
 */
import { maskKey, fingerprintKey } from '../spec/key.js';
import { clock } from '../clock.js';
import { USER_ID } from './account.js';
import type { Audit, FaultedCreate } from './audit.js';
import { create } from './creates.js';
import { malformedBody } from './faultInjector.js';
import type { Lane } from './limits.js';
import { resolveSimOptions, type SimOptions } from './options.js';
import { buildParts, type SimParts } from './parts.js';
import { poll } from './polls.js';
import { CODES, clientRequestId, fail, jsonResponse, ok, type SimRequest, type SimResponse } from './responses.js';
import { matchRoute, pathOf, redirectCall, type Route } from './routes.js';
import type { TaskLogEntry } from './taskBook.js';
import type { Task } from './tasks.js';

export type { SimOptions } from './options.js';
export type { SimRequest, SimResponse } from './responses.js';
export type { Audit, FaultedCreate } from './audit.js';
export type { FaultConfig, FaultName, FaultProfileName } from './faults.js';

export class SimModel {
  private readonly parts: SimParts;
  private requestSeq = 0;

  constructor(opts: SimOptions) {
    this.parts = buildParts(resolveSimOptions(opts));
  }

  get resultOrigin(): string {
    return this.parts.cfg.resultOrigin;
  }

  async handleApi(req: SimRequest): Promise<SimResponse> {
    const requestId = clientRequestId(req.headers) ?? this.newRequestId();
    try {
      return await this.api(req, requestId);
    } catch {
      return fail(requestId, 500, CODES.GENERAL, 'internal server error');
    }
  }

  /** A GET or HEAD of the result origin (resultOrigin.ts). */
  handleResult(req: SimRequest): Promise<SimResponse> {
    return this.parts.origin.handle(req);
  }

  /**
   * Every task accepted, in order of acceptance: what the bench's clairvoyant bound is
   * computed from (the true latencies, in the client's own submission order).
   */
  taskLog(): TaskLogEntry[] {
    return this.parts.tasks.log();
  }

  audit(): Audit {
    const now = clock.now();
    const { account, limits, recorder, tasks } = this.parts;
    account.settle(now);
    return recorder.snapshot(now, (fp) => limits.laneByFingerprint(fp)?.active.length ?? 0, tasks.byStatus(now));
  }

  private async api(req: SimRequest, requestId: string): Promise<SimResponse> {
    const { account, faults, limits, recorder } = this.parts;
    const method = req.method.toUpperCase();
    const path = pathOf(req.path);
    if (path === '/__sim/audit' && method === 'GET') {
      return jsonResponse(200, this.audit(), { 'x-request-id': requestId });
    }

    const key = req.headers['x-api-key'];
    const lane = key === undefined ? undefined : limits.laneOf(key);
    if (!lane) {
      recorder.unauthorized(key ? fingerprintKey(key) : undefined);
      return fail(requestId, 401, CODES.GENERAL, 'API key is invalid or inactive');
    }

    const now = clock.now();
    account.settle(now);
    recorder.arrived(lane.fingerprint, now);
    const route = matchRoute(method, path);
    const isCreate = route.kind === 'create';

    // A moved service or a proxy in front of it: the answer comes before the service's own.
    const moved = faults.redirect(redirectCall(route), req.path);
    if (moved) {
      recorder.fault('redirect', lane.fingerprint);
      return {
        status: moved.status,
        headers: { location: moved.location, 'content-type': 'text/plain; charset=utf-8', 'x-request-id': requestId },
        body: Buffer.from(`moved: ${moved.location}\n`),
      };
    }

    const burst = faults.burst503(now);
    if (burst) {
      if (burst.started) recorder.burst(burst.started.fromMs, burst.started.untilMs);
      recorder.fault('burst503', lane.fingerprint);
      return fail(requestId, 503, CODES.BUSY, 'service busy: a protective service is temporarily unavailable', {
        'retry-after': String(Math.max(1, Math.ceil((burst.untilMs - now) / 1000))),
      });
    }

    // A refused call is counted in the windows too (limits.ts): its 429 says when, with it, a call fits again.
    const limited = limits.check(lane, now, isCreate);
    if (limited) {
      recorder.rejected(lane.fingerprint, limited.scope);
      limits.record(lane, now);
      return limits.tooMany(requestId, limits.refusedAgain(lane, limited, now), now);
    }
    const spurious = faults.spurious429(isCreate);
    if (spurious) {
      recorder.fault('spurious429', lane.fingerprint);
      limits.record(lane, now);
      return limits.spurious429(requestId, lane, spurious.scope, spurious.retryAfterS, now);
    }
    limits.record(lane, now);
    recorder.passed(lane.fingerprint);

    if (route.kind === 'create') {
      const out = await create(this.parts, route.capability, req, lane, requestId);
      return out.injected ? out.res : this.answerFaults(out.res, true, req, requestId, out.task);
    }
    return this.answerFaults(await this.route(route, req, key!, lane, requestId, now), false, req, requestId, undefined);
  }

  private async route(
    route: Exclude<Route, { kind: 'create' }>,
    req: SimRequest,
    key: string,
    lane: Lane,
    requestId: string,
    now: number,
  ): Promise<SimResponse> {
    switch (route.kind) {
      case 'credits':
        return ok(requestId, this.parts.account.credits());
      case 'usage':
        return ok(requestId, { apiKey: maskKey(key), userId: USER_ID, ...this.parts.limits.remaining(lane, now) });
      case 'upload':
        return this.parts.uploads.upload(req, lane.fingerprint, requestId);
      case 'poll':
        return poll(this.parts, route.businessType, route.taskId, lane, requestId, now);
      case 'unknown':
        return fail(requestId, 404, CODES.PARAM, `no such endpoint: ${req.method.toUpperCase()} ${pathOf(req.path)}`);
    }
  }

  /**
   * Faults that strike an answer already computed: for a create, its task exists whatever
   * the client then sees, and the audit lists it among the ambiguous-but-real creates.
   */
  private answerFaults(res: SimResponse, isCreate: boolean, req: SimRequest, requestId: string, task: Task | undefined): SimResponse {
    const { faults, recorder } = this.parts;
    const note = (fault: FaultedCreate['fault']) => {
      recorder.fault(fault);
      if (task) {
        recorder.faultedCreate({
          fault,
          sentRequestId: req.headers['x-request-id'] ?? null,
          requestId,
          taskId: task.taskId,
          sourceId: task.sourceId,
          atMs: clock.now(),
        });
      }
    };
    if (task && faults.droppedCreate()) {
      note('droppedCreate');
      return { ...res, drop: true };
    }
    let out = res;
    const delayMs = faults.slowAnswer(isCreate);
    if (delayMs !== undefined) {
      note('slowAnswer');
      out = { ...out, delayMs };
    }
    if (out.status === 200 && faults.malformedJson(isCreate)) {
      note('malformedJson');
      out = { ...out, body: malformedBody(out.body) };
    }
    return out;
  }

  private newRequestId(): string {
    return `sim-${(++this.requestSeq).toString(16).padStart(6, '0')}-${this.parts.idRng.hex(12)}`;
  }
}
