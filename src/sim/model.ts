/**
 * The simulated image service: one model, pure of I/O except fetching external image URLs,
 * served over HTTP by server.ts and called in-process by deterministic simulations.
 *
 * Decisions where the spec is silent (the rest are in params.ts, processing.ts, audit.ts):
 * - Order of checks: key (401) → call-rate windows → active-task slots (creates only) →
 *   endpoint (404/-2 for an unknown path or method) → parameters (-2/-3) → subscription
 *   (24403) → image resolution (-2) → credits (20601).
 * - The server's windows count the calls it did not answer 429; a 429 of any scope is not
 *   counted, but the audit still records it as a call that arrived. 401s count nowhere.
 * - When several windows are full, the one that frees last names the scope, so waiting
 *   Retry-After is enough for all of them.
 * - All keys belong to one account: credits and subscription are shared, any key may poll
 *   any task; the active-task limit belongs to the key that created the task.
 * - Every capability costs 1 credit per task. A create needs the remaining credits minus
 *   those held by unfinished tasks; the balance drops only when a task succeeds.
 * - Creation shapes: enhance → {parentTaskId, tasks:[{taskId, asyncTaskQueueVO}], queueStatus};
 *   image2image → {asyncTaskQueueVO:{rank, waitTime, asyncTaskId}} with a numeric id, polled
 *   as its decimal string; restore, unblur, upscale → {taskId, businessType, status}; colorize
 *   and background removal → {taskId, status} without businessType (the spec's gap: the
 *   client must fall back to COLORIZE / REMOVE_BACKGROUND, which the poll accepts).
 * - Polls: status REQUESTED for the first 10% of the latency, then PENDING, then the outcome.
 *   generateUrl is null until SUCCESS. Tasks never expire. An unknown businessType is 404/-60404.
 * - rank is 1 + the tasks service-wide still REQUESTED at acceptance; purely informational.
 * - Uploads: JPG/PNG/WEBP by magic bytes, at most 20 MB, else 400/-2. An `image` URL on the
 *   result origin is resolved from memory; any other http(s) URL is fetched (no key sent).
 * - GET /__sim/audit answers the bare audit JSON (no envelope), needs no key, counts nowhere.
 * - In-process, every answer except one fetching an external URL is computed without
 *   waiting on I/O, so virtual time cannot move during a call. Result downloads run sharp
 *   unless `processing: 'passthrough'`.
 * - Injected faults (faults.ts) come after the key check, in this order: a 503 burst (before
 *   the limits), the real limits, a spurious 429; on a create, a 24403-in-200 at the
 *   subscription check; after the answer is computed (a create's task already exists), a
 *   dropped connection (creates only), a slow answer, a malformed body. Faulted calls that
 *   are 503 or 429 count in no window, like real 429s. A poll may make its task vanish, a
 *   create the service's copy of its uploaded image (forgottenUpload: -2 from then on). A
 *   `redirect` (faults.ts) answers right after the key check, before everything else, and
 *   counts in no window.
 *   The result origin may answer an expired URL or a truncated body. /__sim/audit and 401s
 *   are never faulted.
 */
import { createHash } from 'node:crypto';
import { request as httpRequest } from 'undici';
import { CAPABILITIES, CAPABILITY_NAMES, type Capability } from '../spec/capabilities.js';
import { fingerprintKey, maskKey } from '../spec/key.js';
import { clock } from '../clock.js';
import { AuditRecorder, type Audit, type FaultedCreate } from './audit.js';
import { FaultInjector, malformedBody } from './faultInjector.js';
import { HOUR_MS, MINUTE_MS, type RateScope } from './scopes.js';
import { CONTENT_TYPES, sniffImage, type ImageExt } from './images.js';
import { boundaryOf, parseMultipart } from './multipart.js';
import { resolveSimOptions, type ResolvedSimOptions, type SimOptions } from './options.js';
import { parseCreateBody, type Parsed } from './params.js';
import { drawLatency } from './latencyShapes.js';
import { processImage, resultExtFor } from './processing.js';
import { Rng } from './random.js';
import {
  CODES,
  clientRequestId,
  fail,
  jsonResponse,
  ok,
  paramError,
  plain,
  type SimRequest,
  type SimResponse,
} from './responses.js';
import { isActiveAt, pickOutcome, statusAt, type Task, type TaskInput } from './tasks.js';
import { RollingWindow } from '../spec/window.js';

export type { SimOptions } from './options.js';
export type { SimRequest, SimResponse } from './responses.js';
export type { Audit, FaultedCreate } from './audit.js';
export type { FaultConfig, FaultName, FaultProfileName } from './faults.js';

export const MAX_UPLOAD_BYTES = 20 * 1024 * 1024;
/** image2image ids are integers in the spec; an offset keeps them clearly apart from counters. */
const IMAGE2IMAGE_ID_BASE = 7_000_000;
/** Creates are 1 credit each, whatever the capability (spec: other costs "not shown"). */
const TASK_COST = 1;
const USER_ID = 'sim-account-1';

interface Lane {
  fingerprint: string;
  minute: RollingWindow;
  hour: RollingWindow;
  /** Tasks not yet known to be terminal; trimmed lazily by settle(). */
  active: Task[];
  /** Creates past the slot check still resolving an external image. */
  creating: number;
}

interface Upload {
  bytes: Buffer;
  ext: ImageExt;
  sourceId: string;
}

interface Limited {
  scope: RateScope;
  limit: number;
  freesAt: number;
}

type Route =
  | { kind: 'credits' }
  | { kind: 'usage' }
  | { kind: 'upload' }
  | { kind: 'create'; capability: Capability }
  | { kind: 'poll'; businessType: string; taskId: string }
  | { kind: 'unknown' };

interface QueueInfo {
  rank: number;
  waitTime: number;
}

type ResolvedImage = { input: TaskInput; inputExt: ImageExt; sourceId: string };

/** The result URL a task hands out now, and which of its URLs have expired. */
interface UrlState {
  /** Version of the current URL; 1 is the plain URL, later ones carry `?v=N`. */
  version: number;
  /** When the current URL was issued (SUCCESS for version 1). */
  issuedAt: number;
  /** The current URL expired at random at a GET. */
  expiredNow: boolean;
  /** Status each expired version answers, drawn once per version. */
  statusOf: Map<number, number>;
}

interface CreateOutcome {
  res: SimResponse;
  /** The task this create made, when it made one. */
  task?: Task;
  /** The answer is itself an injected fault: no further fault applies to it. */
  injected?: boolean;
}

const CREATE_PATHS = new Map<string, Capability>(CAPABILITY_NAMES.map((c) => [CAPABILITIES[c].path, c]));
const POLL_RE = /^\/api\/v1\/tasks\/([^/]+)\/([^/]+)$/;
const UPLOAD_PATH_RE = /^\/uploads\/([A-Za-z0-9_-]+)\.(jpg|png|webp)$/;
const RESULT_PATH_RE = /^\/results\/([A-Za-z0-9_-]+)\.(jpg|png|webp)$/;

export class SimModel {
  private readonly cfg: ResolvedSimOptions;
  private readonly taskRng: Rng;
  private readonly idRng: Rng;
  private readonly lanesByKey = new Map<string, Lane>();
  private readonly lanesByFingerprint = new Map<string, Lane>();
  private readonly globalMinute: RollingWindow;
  private readonly globalHour: RollingWindow;
  private readonly tasks = new Map<string, Task>();
  /** When the first task was accepted: a drifting latency's clock (latencyShapes.ts). */
  private firstTaskAt: number | undefined;
  private readonly uploads = new Map<string, Upload>();
  private readonly results = new Map<string, Promise<Buffer>>();
  private readonly recorder: AuditRecorder;
  private readonly faults: FaultInjector;
  /** Tasks that vanished: gone for polls, results and new creates; still readable as inputs of tasks made before. */
  private readonly vanished = new Set<string>();
  /** `${sourceId}|${capability}` that already lost a task (each loses at most one). */
  private readonly vanishedSources = new Set<string>();
  private readonly urls = new Map<string, UrlState>();
  /** Uploads the service has forgotten (forgottenUpload): gone for creates and GETs. */
  private readonly forgottenUploads = new Set<string>();
  /** Source images that already lost an upload (each loses at most one). */
  private readonly forgottenSources = new Set<string>();
  /** Result URLs (path and version) whose last GET was truncated. */
  private readonly truncatedLast = new Set<string>();
  private usedCredits = 0;
  private taskSeq = 0;
  private uploadSeq = 0;
  private requestSeq = 0;

  constructor(opts: SimOptions) {
    this.cfg = resolveSimOptions(opts);
    this.taskRng = new Rng(this.cfg.seed, 1);
    this.idRng = new Rng(this.cfg.seed, 2);
    const { limits } = this.cfg;
    for (const key of this.cfg.keys) {
      if (this.lanesByKey.has(key)) continue;
      const lane: Lane = {
        fingerprint: fingerprintKey(key),
        minute: new RollingWindow(limits.callsPerMinute, MINUTE_MS),
        hour: new RollingWindow(limits.callsPerHour, HOUR_MS),
        active: [],
        creating: 0,
      };
      this.lanesByKey.set(key, lane);
      this.lanesByFingerprint.set(lane.fingerprint, lane);
    }
    this.globalMinute = new RollingWindow(this.cfg.global.callsPerMinute, MINUTE_MS);
    this.globalHour = new RollingWindow(this.cfg.global.callsPerHour, HOUR_MS);
    this.recorder = new AuditRecorder([...this.lanesByFingerprint.keys()]);
    this.faults = new FaultInjector(this.cfg.faults, this.cfg.seed);
  }

  get resultOrigin(): string {
    return this.cfg.resultOrigin;
  }

  async handleApi(req: SimRequest): Promise<SimResponse> {
    const requestId = clientRequestId(req.headers) ?? this.newRequestId();
    try {
      return await this.api(req, requestId);
    } catch {
      return fail(requestId, 500, CODES.GENERAL, 'internal server error');
    }
  }

  async handleResult(req: SimRequest): Promise<SimResponse> {
    const leaked = req.headers['x-api-key'];
    if (leaked !== undefined) this.recorder.keyLeak(req.path, clock.now(), fingerprintKey(leaked));
    const method = req.method.toUpperCase();
    if (method !== 'GET' && method !== 'HEAD') return plain(405, 'method not allowed\n', { allow: 'GET, HEAD' });
    const path = pathOf(req.path);
    const res = RESULT_PATH_RE.exec(path);
    if (res) return this.serveResult(res[1]!, res[2]!, versionOf(req.path), method);
    const up = UPLOAD_PATH_RE.exec(path);
    const u = up && !this.forgottenUploads.has(up[1]!) ? this.uploads.get(up[1]!) : undefined;
    if (!u || u.ext !== up![2]) return plain(404, 'not found\n');
    return imageAnswer(u.bytes, u.ext, method);
  }

  private async serveResult(taskId: string, ext: string, version: number | undefined, method: string): Promise<SimResponse> {
    const now = clock.now();
    const t = this.liveTask(taskId);
    if (!t || t.resultExt !== ext || statusAt(t, now) !== 'SUCCESS') return plain(404, 'not found\n');
    const url = this.urlState(t);
    if (version === undefined || version > url.version) return plain(404, 'not found\n');
    if (version < url.version || this.expired(url, now)) return this.expiredAnswer(url, version);
    if (method === 'GET' && version === 1 && this.faults.expireAtRandom()) {
      url.expiredNow = true;
      return this.expiredAnswer(url, version);
    }
    let bytes: Buffer;
    try {
      bytes = await this.resultBytes(t);
    } catch {
      return plain(500, 'could not produce the image\n');
    }
    const answer = imageAnswer(bytes, t.resultExt, method);
    if (method !== 'GET') return answer;
    const key = `${taskId}|${version}`;
    const keep = this.truncatedLast.has(key) ? undefined : this.faults.truncate(bytes.length);
    if (keep === undefined) {
      this.truncatedLast.delete(key);
      return answer;
    }
    this.truncatedLast.add(key);
    this.recorder.fault('truncatedDownload');
    return { ...answer, body: bytes.subarray(0, keep), truncated: true };
  }

  private expiredAnswer(url: UrlState, version: number): SimResponse {
    let status = url.statusOf.get(version);
    if (status === undefined) {
      status = this.faults.expiredStatus();
      url.statusOf.set(version, status);
    }
    this.recorder.fault('expiredResultUrl');
    const text = status === 403 ? 'forbidden: the link has expired\n' : status === 410 ? 'gone: the link has expired\n' : 'not found\n';
    return plain(status, text);
  }

  /** The current URL of a task that has succeeded; version 1 is issued at SUCCESS. */
  private urlState(task: Task): UrlState {
    let u = this.urls.get(task.taskId);
    if (!u) {
      u = { version: 1, issuedAt: task.completesAt, expiredNow: false, statusOf: new Map() };
      this.urls.set(task.taskId, u);
    }
    return u;
  }

  private expired(url: UrlState, now: number): boolean {
    const after = this.cfg.faults.expiredResultUrl.afterMs;
    return url.expiredNow || (after !== undefined && now >= url.issuedAt + after);
  }

  private liveTask(taskId: string): Task | undefined {
    return this.vanished.has(taskId) ? undefined : this.tasks.get(taskId);
  }

  /**
   * Every task accepted, in order of acceptance: what the bench's clairvoyant bound is
   * computed from (the true latencies, in the client's own submission order).
   */
  taskLog(): { keyFingerprint: string; sourceId: string; capability: Capability; creation: number; latencyMs: number; seenEndedAt: number | null }[] {
    return [...this.tasks.values()].map((t) => ({
      keyFingerprint: t.keyFingerprint,
      sourceId: t.sourceId,
      capability: t.capability,
      creation: t.creation,
      latencyMs: t.latencyMs,
      seenEndedAt: t.seenEndedAt ?? null,
    }));
  }

  audit(): Audit {
    const now = clock.now();
    this.settle(now);
    const byStatus: Record<string, number> = {};
    for (const t of this.tasks.values()) {
      if (this.vanished.has(t.taskId)) continue; // counted in faults.vanishedTask
      const s = statusAt(t, now);
      byStatus[s] = (byStatus[s] ?? 0) + 1;
    }
    return this.recorder.snapshot(now, (fp) => this.lanesByFingerprint.get(fp)?.active.length ?? 0, byStatus);
  }

  private async api(req: SimRequest, requestId: string): Promise<SimResponse> {
    const method = req.method.toUpperCase();
    const path = pathOf(req.path);
    if (path === '/__sim/audit' && method === 'GET') {
      return jsonResponse(200, this.audit(), { 'x-request-id': requestId });
    }

    const key = req.headers['x-api-key'];
    const lane = key === undefined ? undefined : this.lanesByKey.get(key);
    if (!lane) {
      this.recorder.unauthorized(key ? fingerprintKey(key) : undefined);
      return fail(requestId, 401, CODES.GENERAL, 'API key is invalid or inactive');
    }

    const now = clock.now();
    this.settle(now);
    this.recorder.arrived(lane.fingerprint, now);
    const route = matchRoute(method, path);
    const isCreate = route.kind === 'create';

    // A moved service or a proxy in front of it: the answer comes before the service's own.
    const moved = this.faults.redirect(redirectCall(route), req.path);
    if (moved) {
      this.recorder.fault('redirect', lane.fingerprint);
      return { status: moved.status, headers: { location: moved.location, 'content-type': 'text/plain; charset=utf-8', 'x-request-id': requestId }, body: Buffer.from(`moved: ${moved.location}\n`) };
    }

    const burst = this.faults.burst503(now);
    if (burst) {
      if (burst.started) this.recorder.burst(burst.started.fromMs, burst.started.untilMs);
      this.recorder.fault('burst503', lane.fingerprint);
      return fail(requestId, 503, CODES.BUSY, 'service busy: a protective service is temporarily unavailable', {
        'retry-after': String(Math.max(1, Math.ceil((burst.untilMs - now) / 1000))),
      });
    }

    const limited = this.callRateLimit(lane, now) ?? (isCreate ? this.slotLimit(lane, now) : undefined);
    if (limited) {
      this.recorder.rejected(lane.fingerprint, limited.scope);
      return this.tooMany(requestId, limited, now);
    }
    const spurious = this.faults.spurious429(isCreate);
    if (spurious) {
      this.recorder.fault('spurious429', lane.fingerprint);
      return this.spurious429(requestId, lane, spurious.scope, spurious.retryAfterS, now);
    }
    lane.minute.record(now);
    lane.hour.record(now);
    this.globalMinute.record(now);
    this.globalHour.record(now);
    this.recorder.passed(lane.fingerprint);

    if (route.kind === 'create') {
      const out = await this.create(route.capability, req, lane, requestId);
      return out.injected ? out.res : this.answerFaults(out.res, true, req, requestId, out.task);
    }
    return this.answerFaults(this.route(route, req, key!, lane, requestId, now), false, req, requestId, undefined);
  }

  private route(route: Exclude<Route, { kind: 'create' }>, req: SimRequest, key: string, lane: Lane, requestId: string, now: number): SimResponse {
    switch (route.kind) {
      case 'credits':
        return ok(requestId, {
          totalCredit: this.cfg.credits,
          usedCredit: this.usedCredits,
          remainingCredit: this.cfg.credits - this.usedCredits,
        });
      case 'usage':
        return ok(requestId, {
          apiKey: maskKey(key),
          userId: USER_ID,
          minuteRemaining: lane.minute.remaining(now),
          hourRemaining: lane.hour.remaining(now),
          globalMinuteRemaining: this.globalMinute.remaining(now),
          globalHourRemaining: this.globalHour.remaining(now),
        });
      case 'upload':
        return this.upload(req, lane, requestId);
      case 'poll':
        return this.poll(route.businessType, route.taskId, lane, requestId, now);
      case 'unknown':
        return fail(requestId, 404, CODES.PARAM, `no such endpoint: ${req.method.toUpperCase()} ${pathOf(req.path)}`);
    }
  }

  /**
   * Faults that strike an answer already computed: for a create, its task exists whatever
   * the client then sees, and the audit lists it among the ambiguous-but-real creates.
   */
  private answerFaults(res: SimResponse, isCreate: boolean, req: SimRequest, requestId: string, task: Task | undefined): SimResponse {
    const note = (fault: FaultedCreate['fault']) => {
      this.recorder.fault(fault);
      if (task) {
        this.recorder.faultedCreate({
          fault,
          sentRequestId: req.headers['x-request-id'] ?? null,
          requestId,
          taskId: task.taskId,
          sourceId: task.sourceId,
          atMs: clock.now(),
        });
      }
    };
    if (task && this.faults.droppedCreate()) {
      note('droppedCreate');
      return { ...res, drop: true };
    }
    let out = res;
    const delayMs = this.faults.slowAnswer(isCreate);
    if (delayMs !== undefined) {
      note('slowAnswer');
      out = { ...out, delayMs };
    }
    if (out.status === 200 && this.faults.malformedJson(isCreate)) {
      note('malformedJson');
      out = { ...out, body: malformedBody(out.body) };
    }
    return out;
  }

  private spurious429(requestId: string, lane: Lane, scope: RateScope, retryAfterS: number | undefined, now: number): SimResponse {
    const limit =
      scope === 'api_key_minute'
        ? lane.minute.limit
        : scope === 'api_key_hour'
          ? lane.hour.limit
          : scope === 'global_minute'
            ? this.globalMinute.limit
            : scope === 'global_hour'
              ? this.globalHour.limit
              : this.cfg.limits.activeTasks;
    if (retryAfterS !== undefined) return this.tooMany(requestId, { scope, limit, freesAt: now + retryAfterS * 1000 }, now);
    return fail(requestId, 429, CODES.BUSY, tooManyMessage(scope, limit));
  }

  /** Drops tasks that have finished by `now` from the slot lists and books their credits. */
  private settle(now: number): void {
    for (const lane of this.lanesByKey.values()) {
      if (lane.active.every((t) => isActiveAt(t, now))) continue;
      const still: Task[] = [];
      for (const t of lane.active) {
        if (isActiveAt(t, now)) still.push(t);
        else if (t.outcome === 'SUCCESS') this.usedCredits += t.cost;
      }
      lane.active = still;
    }
  }

  private callRateLimit(lane: Lane, now: number): Limited | undefined {
    const windows: Array<[RateScope, RollingWindow]> = [
      ['api_key_minute', lane.minute],
      ['api_key_hour', lane.hour],
      ['global_minute', this.globalMinute],
      ['global_hour', this.globalHour],
    ];
    let worst: Limited | undefined;
    for (const [scope, w] of windows) {
      if (w.admits(now)) continue;
      const freesAt = w.nextFreeAt(now);
      if (!worst || freesAt > worst.freesAt) worst = { scope, limit: w.limit, freesAt };
    }
    return worst;
  }

  private slotLimit(lane: Lane, now: number): Limited | undefined {
    const limit = this.cfg.limits.activeTasks;
    if (lane.active.length + lane.creating < limit) return undefined;
    let freesAt = Infinity;
    for (const t of lane.active) freesAt = Math.min(freesAt, t.completesAt);
    // Only in-flight creates hold the slots: they resolve within a fetch timeout.
    if (freesAt === Infinity) freesAt = now + 1000;
    return { scope: 'api_key_active_tasks', limit, freesAt };
  }

  private tooMany(requestId: string, l: Limited, now: number): SimResponse {
    const retryAfter = Math.max(1, Math.ceil((l.freesAt - now) / 1000));
    return fail(requestId, 429, CODES.BUSY, tooManyMessage(l.scope, l.limit), {
      'ratelimit-limit': String(l.limit),
      'ratelimit-remaining': '0',
      'ratelimit-reset': String(Math.ceil(l.freesAt / 1000)),
      'retry-after': String(retryAfter),
      'ratelimit-scope': l.scope,
    });
  }

  private upload(req: SimRequest, lane: Lane, requestId: string): SimResponse {
    const boundary = boundaryOf(req.headers['content-type']);
    if (!boundary) return paramError(requestId, 'Content-Type must be multipart/form-data with a boundary');
    if (req.body.length > MAX_UPLOAD_BYTES + 64 * 1024) {
      return paramError(requestId, `file is larger than ${MAX_UPLOAD_BYTES} bytes`);
    }
    const parts = parseMultipart(req.body, boundary);
    if (!parts) return paramError(requestId, 'malformed multipart/form-data body');
    const part = parts.find((p) => p.name === 'image');
    if (!part || part.data.length === 0) return paramError(requestId, 'image file is required (form field "image")');
    if (part.data.length > MAX_UPLOAD_BYTES) return paramError(requestId, `file is larger than ${MAX_UPLOAD_BYTES} bytes`);
    const ext = sniffImage(part.data);
    if (!ext) return paramError(requestId, 'unsupported image type; accepted: JPG, JPEG, PNG, WEBP');

    // A copy, so the stored image does not pin the whole request body in memory.
    const bytes = Buffer.from(part.data);
    const id = `u${(++this.uploadSeq).toString(16).padStart(6, '0')}${this.idRng.hex(10)}`;
    const sourceId = sha16(bytes);
    this.uploads.set(id, { bytes, ext, sourceId });
    this.recorder.uploaded(lane.fingerprint, sourceId);
    return ok(requestId, { imageUrl: `${this.cfg.resultOrigin}/uploads/${id}.${ext}` });
  }

  private async create(capability: Capability, req: SimRequest, lane: Lane, requestId: string): Promise<CreateOutcome> {
    const parsed = parseCreateBody(capability, req.body, this.cfg.styles);
    if (!parsed.ok) return { res: fail(requestId, 400, parsed.code, parsed.message) };
    if (!this.cfg.subscribed) {
      return { res: fail(requestId, 400, CODES.NOT_SUBSCRIBED, 'account is not subscribed or out of the subscription period') };
    }
    if (this.faults.notSubscribed200()) {
      this.recorder.fault('notSubscribed200');
      // The published example's shape: HTTP 200, no requestId in the body or its header.
      return {
        res: jsonResponse(200, { code: CODES.NOT_SUBSCRIBED, message: 'not subscribed or out of the subscription period' }),
        injected: true,
      };
    }

    lane.creating++;
    let image: Parsed<ResolvedImage>;
    try {
      image = await this.resolveImage(parsed.value.image);
    } finally {
      lane.creating--;
    }
    if (!image.ok) return { res: fail(requestId, 400, image.code, image.message) };

    const now = clock.now();
    this.settle(now);
    if (this.availableCredits() < TASK_COST) return { res: fail(requestId, 400, CODES.NO_CREDITS, 'insufficient credits') };

    const { task, queue } = this.accept(capability, lane, image.value, parsed.value.process, now);
    return { res: ok(requestId, creationData(task, queue)), task };
  }

  private availableCredits(): number {
    let held = 0;
    for (const lane of this.lanesByKey.values()) for (const t of lane.active) held += t.cost;
    return this.cfg.credits - this.usedCredits - held;
  }

  private accept(
    capability: Capability,
    lane: Lane,
    image: ResolvedImage,
    params: Task['params'],
    now: number,
  ): { task: Task; queue: QueueInfo } {
    const n = ++this.taskSeq;
    // Always the same three draws per task, so outcomes depend only on how many tasks came before.
    this.firstTaskAt ??= now;
    const latencyMs = drawLatency(this.taskRng, this.cfg.latency[capability], now - this.firstTaskAt);
    const outcome = pickOutcome(this.taskRng.uniform(), this.cfg.outcomes);
    const noise = this.taskRng.normal();
    const sigma = this.cfg.waitTimeNoiseSigma;
    const waitTime = sigma === 'none' ? 0 : Math.max(0, Math.round(latencyMs * this.cfg.waitTimeBias * Math.exp(sigma * noise)));

    let rank = 1;
    for (const l of this.lanesByKey.values()) for (const t of l.active) if (t.startsAt > now) rank++;

    const taskId =
      capability === 'image2image'
        ? String(IMAGE2IMAGE_ID_BASE + n)
        : `${n.toString(16).padStart(6, '0')}${this.idRng.hex(18)}`;
    const task: Task = {
      taskId,
      capability,
      businessType: CAPABILITIES[capability].businessType,
      keyFingerprint: lane.fingerprint,
      creation: now,
      latencyMs,
      startsAt: now + Math.floor(latencyMs * 0.1),
      completesAt: now + latencyMs,
      outcome,
      cost: TASK_COST,
      input: image.input,
      inputExt: image.inputExt,
      resultExt: this.cfg.processing === 'passthrough' ? image.inputExt : resultExtFor(capability),
      sourceId: image.sourceId,
      params,
    };
    this.tasks.set(taskId, task);
    lane.active.push(task);
    this.recorder.created(lane.fingerprint, task.sourceId, lane.active.length);
    return { task, queue: { rank, waitTime } };
  }

  private poll(businessType: string, taskId: string, lane: Lane, requestId: string, now: number): SimResponse {
    this.recorder.polled(lane.fingerprint);
    const notFound = () => fail(requestId, 404, CODES.TASK_NOT_FOUND, 'task not found for this businessType');
    const task = this.liveTask(taskId);
    if (!task || task.businessType !== businessType) return notFound();
    const source = `${task.sourceId}|${task.capability}`;
    if (!this.vanishedSources.has(source) && this.faults.vanishedTask(now - task.creation)) {
      this.vanish(task, source);
      return notFound();
    }
    const status = statusAt(task, now);
    if (task.seenEndedAt === undefined && now >= task.completesAt) task.seenEndedAt = now;
    return ok(requestId, {
      taskId: task.taskId,
      status,
      creation: task.creation,
      generateUrl: status === 'SUCCESS' ? this.currentResultUrl(task, now) : null,
    });
  }

  /** Gone for good: its slot is freed at once and its credit, if still held, released. */
  private vanish(task: Task, source: string): void {
    this.vanished.add(task.taskId);
    this.vanishedSources.add(source);
    const lane = this.lanesByFingerprint.get(task.keyFingerprint);
    if (lane) lane.active = lane.active.filter((t) => t !== task);
    this.recorder.fault('vanishedTask');
  }

  /** A poll hands out a new URL once the current one has expired. */
  private currentResultUrl(task: Task, now: number): string {
    const url = this.urlState(task);
    if (this.expired(url, now) || url.statusOf.has(url.version)) {
      url.version++;
      url.issuedAt = now;
      url.expiredNow = false;
    }
    const base = `${this.cfg.resultOrigin}/results/${task.taskId}.${task.resultExt}`;
    return url.version === 1 ? base : `${base}?v=${url.version}`;
  }

  private async resolveImage(image: string): Promise<Parsed<ResolvedImage>> {
    const notUrl = 'image must be an http(s) URL; base64 data is rejected';
    if (/^data:/i.test(image)) return bad(notUrl);
    let url: URL;
    try {
      url = new URL(image);
    } catch {
      return bad(notUrl);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return bad(notUrl);
    if (url.origin === this.cfg.resultOrigin) return this.resolveInternal(url.pathname);
    return this.fetchExternal(url);
  }

  /** The sim's own uploads and results are resolved from memory, never over the network. */
  private resolveInternal(pathname: string): Parsed<ResolvedImage> {
    const up = UPLOAD_PATH_RE.exec(pathname);
    if (up) {
      const u = this.uploads.get(up[1]!);
      if (!u || u.ext !== up[2] || this.forgottenUploads.has(up[1]!)) return bad('image not found');
      if (!this.forgottenSources.has(u.sourceId) && this.faults.forgottenUpload()) {
        this.forgottenUploads.add(up[1]!);
        this.forgottenSources.add(u.sourceId);
        this.recorder.fault('forgottenUpload');
        return bad('image not found');
      }
      return { ok: true, value: { input: { kind: 'upload', uploadId: up[1]! }, inputExt: u.ext, sourceId: u.sourceId } };
    }
    const res = RESULT_PATH_RE.exec(pathname);
    if (res) {
      const t = this.liveTask(res[1]!);
      if (!t || t.resultExt !== res[2] || statusAt(t, clock.now()) !== 'SUCCESS') return bad('image not found');
      return { ok: true, value: { input: { kind: 'result', taskId: t.taskId }, inputExt: t.resultExt, sourceId: t.sourceId } };
    }
    return bad('image not found');
  }

  private async fetchExternal(url: URL): Promise<Parsed<ResolvedImage>> {
    let bytes: Buffer;
    try {
      const res = await httpRequest(url, { method: 'GET', headersTimeout: 15_000, bodyTimeout: 30_000 });
      if (res.statusCode !== 200) {
        await res.body.dump();
        return bad(`image URL answered HTTP ${res.statusCode}`);
      }
      const chunks: Buffer[] = [];
      let total = 0;
      for await (const chunk of res.body) {
        const b = chunk as Buffer;
        total += b.length;
        if (total > MAX_UPLOAD_BYTES) {
          res.body.destroy();
          return bad(`image is larger than ${MAX_UPLOAD_BYTES} bytes`);
        }
        chunks.push(b);
      }
      bytes = Buffer.concat(chunks);
    } catch {
      return bad('image URL could not be fetched');
    }
    const ext = sniffImage(bytes);
    if (!ext) return bad('image URL is not a JPG, PNG or WEBP image');
    return { ok: true, value: { input: { kind: 'bytes', bytes }, inputExt: ext, sourceId: `url:${sha16(Buffer.from(url.href))}` } };
  }

  /** Computed on first download and memoized: the same task always serves the same bytes. */
  private resultBytes(task: Task): Promise<Buffer> {
    let p = this.results.get(task.taskId);
    if (!p) {
      p = this.computeResult(task);
      this.results.set(task.taskId, p);
      p.catch(() => this.results.delete(task.taskId));
    }
    return p;
  }

  private async computeResult(task: Task): Promise<Buffer> {
    const input = await this.inputBytes(task.input);
    if (this.cfg.processing === 'passthrough') return input;
    return processImage(task.capability, input, task.params);
  }

  private async inputBytes(input: TaskInput): Promise<Buffer> {
    switch (input.kind) {
      case 'bytes':
        return input.bytes;
      case 'upload': {
        const u = this.uploads.get(input.uploadId);
        if (!u) throw new Error(`upload ${input.uploadId} vanished`);
        return u.bytes;
      }
      case 'result': {
        const t = this.tasks.get(input.taskId);
        if (!t) throw new Error(`task ${input.taskId} vanished`);
        return this.resultBytes(t);
      }
    }
  }

  private newRequestId(): string {
    return `sim-${(++this.requestSeq).toString(16).padStart(6, '0')}-${this.idRng.hex(12)}`;
  }
}

function tooManyMessage(scope: RateScope, limit: number): string {
  return scope === 'api_key_active_tasks'
    ? `too many active tasks for this API key (limit ${limit})`
    : `call rate limit exceeded (${scope}, limit ${limit})`;
}

function imageAnswer(bytes: Buffer, ext: ImageExt, method: string): SimResponse {
  return {
    status: 200,
    headers: { 'content-type': CONTENT_TYPES[ext], 'content-length': String(bytes.length) },
    body: method === 'HEAD' ? Buffer.alloc(0) : bytes,
  };
}

/** `v` of a result URL's query: 1 when absent, undefined when not a positive whole number. */
function versionOf(raw: string): number | undefined {
  const q = raw.indexOf('?');
  if (q < 0) return 1;
  const v = new URLSearchParams(raw.slice(q + 1)).get('v');
  if (v === null) return 1;
  return /^[1-9][0-9]{0,8}$/.test(v) ? Number(v) : undefined;
}

function creationData(task: Task, queue: QueueInfo): unknown {
  switch (task.capability) {
    case 'enhance':
      return {
        parentTaskId: `p${task.taskId}`,
        tasks: [{ taskId: task.taskId, asyncTaskQueueVO: queue }],
        queueStatus: 'PENDING',
      };
    case 'image2image':
      return { asyncTaskQueueVO: { ...queue, asyncTaskId: Number(task.taskId) } };
    case 'colorize':
    case 'remove-background':
      return { taskId: task.taskId, status: 'PENDING' };
    default:
      return { taskId: task.taskId, businessType: task.businessType, status: 'PENDING' };
  }
}

/** Which kind of call a `redirect` fault's `calls` names. */
function redirectCall(route: Route): 'upload' | 'create' | 'poll' | 'account' | 'other' {
  switch (route.kind) {
    case 'credits':
    case 'usage':
      return 'account';
    case 'unknown':
      return 'other';
    default:
      return route.kind;
  }
}

function matchRoute(method: string, path: string): Route {
  if (method === 'GET' && path === '/api/v1/credits') return { kind: 'credits' };
  if (method === 'GET' && path === '/api/v1/usage') return { kind: 'usage' };
  if (method === 'POST' && path === '/api/v1/image/upload') return { kind: 'upload' };
  if (method === 'POST') {
    const capability = CREATE_PATHS.get(path);
    if (capability) return { kind: 'create', capability };
  }
  if (method === 'GET') {
    const m = POLL_RE.exec(path);
    if (m) {
      try {
        return { kind: 'poll', businessType: decodeURIComponent(m[1]!), taskId: decodeURIComponent(m[2]!) };
      } catch {
        return { kind: 'unknown' };
      }
    }
  }
  return { kind: 'unknown' };
}

/** The path without its query; a trailing slash is forgiven, as most routers do. */
function pathOf(raw: string): string {
  const q = raw.search(/[?#]/);
  const p = q < 0 ? raw : raw.slice(0, q);
  return p.length > 1 && p.endsWith('/') ? p.slice(0, -1) : p;
}

function sha16(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex').slice(0, 16);
}

function bad(message: string): { ok: false; code: number; message: string } {
  return { ok: false, code: CODES.PARAM, message };
}
