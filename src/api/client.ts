/**
 * One method per endpoint. Each call either returns the normalized data or throws an
 * ApiError whose `kind` tells the caller what it may do next. The client never retries
 * or sleeps: the scheduler owns pacing and retries, and must see every call.
 */
import { clock } from '../clock.js';
import { CAPABILITIES, type Capability } from '../spec/capabilities.js';
import { ENDPOINTS } from '../spec/endpoints.js';
import { classify, MALFORMED_RESPONSE, NOT_SENT, OUTCOME_UNKNOWN, redirectReason, type Classification } from './classify.js';
import type { ApiClientOptions, CallOpts, CallRecord, CallTicket, CreateBody } from './calls.js';
import { apiError, sanitize } from './errors.js';
import { ShapeError } from '../errors.js';
import { getHeader, parseRetryAfter, rateLimitFrom } from './headers.js';
import { parseJsonKeepingBigInts } from './json.js';
import { multipartFile } from './multipart.js';
import { isValidRequestId, newRequestId } from './requestId.js';
import {
  parseCreateResult,
  parseCredits,
  parseEnvelope,
  parseTaskInfo,
  parseUpload,
  parseUsage,
  type CreateResult,
  type Credits,
  type TaskInfo,
  type UploadResult,
  type Usage,
} from './shapes.js';
import { undiciTransport } from './transport.js';
import { toTransportError, type Transport, type WireRequest, type WireResponse } from '../spec/wire.js';

export type { ApiClientOptions, CallOpts, CallRecord, CallTicket, CreateBody } from './calls.js';

interface CallSpec<T> {
  method: 'GET' | 'POST';
  endpoint: string;
  path: string;
  body?: Buffer | string;
  contentType?: string;
  /** Reads `data`; throwing makes the response malformed. */
  parse: (data: unknown, requestId: string | null) => T;
}

function pathParam(value: string, name: string): string {
  // "." and ".." (even as %2E) are dot-segments to URL parsers and would change the path.
  if (value === '' || value === '.' || value === '..') {
    throw new RangeError(`${name} must be a non-empty id, not "${value}"`);
  }
  return encodeURIComponent(value);
}

export class ApiClient {
  readonly #key: string;
  readonly #origin: string;
  readonly #prefix: string;
  readonly #transport: Transport;
  readonly #timeoutMs: number;
  readonly #onCall: ((rec: CallRecord) => void) | undefined;
  readonly #keyEnv: string | undefined;
  readonly #ownsTransport: boolean;
  readonly #opts: ApiClientOptions;
  #ticket: CallTicket | undefined;

  constructor(opts: ApiClientOptions) {
    this.#opts = opts;
    let base: URL;
    try {
      base = new URL(opts.baseUrl);
    } catch {
      throw new TypeError(`baseUrl is not a URL: ${sanitize(opts.baseUrl, [opts.apiKey], 100)}`);
    }
    if (base.protocol !== 'https:' && base.protocol !== 'http:') {
      throw new TypeError(`baseUrl must be http(s), got ${base.protocol}`);
    }
    if (base.username !== '' || base.password !== '' || base.search !== '' || base.hash !== '') {
      throw new TypeError('baseUrl must not carry credentials, a query or a fragment');
    }
    if (opts.apiKey === '') throw new TypeError('apiKey is empty');
    this.#key = opts.apiKey;
    this.#origin = base.origin;
    this.#prefix = base.pathname.replace(/\/+$/, '');
    this.#ownsTransport = opts.transport === undefined;
    this.#transport = opts.transport ?? undiciTransport();
    this.#timeoutMs = opts.timeoutMs ?? 30_000;
    this.#onCall = opts.onCall;
    this.#keyEnv = opts.keyEnv;
  }

  /**
   * This client for one call made under `ticket` (its reservation in the key's budget): same
   * key, base URL, transport and hooks; closing it closes nothing.
   */
  withTicket(ticket: CallTicket): ApiClient {
    const c = new ApiClient({ ...this.#opts, transport: this.#transport });
    c.#ticket = ticket;
    return c;
  }

  /** Closes the transport if this client created it; a given transport belongs to the caller. */
  async close(): Promise<void> {
    const t = this.#transport as Transport & { close?: () => Promise<void> };
    if (this.#ownsTransport && t.close) await t.close();
  }

  /** The origin the key is sent to, and nowhere else (L5). */
  get origin(): string {
    return this.#origin;
  }

  async credits(opts: CallOpts = {}): Promise<Credits> {
    return this.#call({ method: 'GET', endpoint: ENDPOINTS.credits, path: ENDPOINTS.credits, parse: parseCredits }, opts);
  }

  async usage(opts: CallOpts = {}): Promise<Usage> {
    const u = await this.#call({ method: 'GET', endpoint: ENDPOINTS.usage, path: ENDPOINTS.usage, parse: parseUsage }, opts);
    // Only the masked form may be kept, whatever the service echoes.
    return { ...u, apiKey: sanitize(u.apiKey, [this.#key], 64) };
  }

  async upload(bytes: Uint8Array, filename: string, contentType: string, opts: CallOpts = {}): Promise<UploadResult> {
    const mp = multipartFile('image', bytes, filename, contentType);
    return this.#call(
      {
        method: 'POST',
        endpoint: ENDPOINTS.upload,
        path: ENDPOINTS.upload,
        body: mp.body,
        contentType: mp.contentType,
        parse: parseUpload,
      },
      opts,
    );
  }

  /**
   * Submit a task. Not idempotent: on an 'ambiguous' error the task may exist; the
   * caller holds the item rather than calling this again (L2).
   */
  async create(capability: Capability, body: CreateBody, opts: CallOpts = {}): Promise<CreateResult> {
    const info = CAPABILITIES[capability];
    if (!info) throw new RangeError(`unknown capability ${String(capability)}`);
    if (body.mode !== undefined && !info.acceptsMode) {
      throw new RangeError(`${capability} does not accept a mode`);
    }
    const json: Record<string, string> = { image: body.image };
    for (const k of ['mode', 'resolution', 'style', 'prompt', 'negativePrompt'] as const) {
      const v = body[k];
      if (v !== undefined) json[k] = v;
    }
    return this.#call(
      {
        method: 'POST',
        endpoint: info.path,
        path: info.path,
        body: JSON.stringify(json),
        contentType: 'application/json',
        parse: (data, requestId) => ({ ...parseCreateResult(data), requestId }),
      },
      opts,
    );
  }

  async task(businessType: string, taskId: string, opts: CallOpts = {}): Promise<TaskInfo> {
    const path = `/api/v1/tasks/${pathParam(businessType, 'businessType')}/${pathParam(taskId, 'taskId')}`;
    return this.#call({ method: 'GET', endpoint: ENDPOINTS.task, path, parse: (data) => parseTaskInfo(data, taskId) }, opts);
  }

  #url(path: string): string {
    const url = new URL(`${this.#origin}${this.#prefix}${path}`);
    // The key travels only to the configured origin (L5); a path can never change it,
    // but this is the line that must hold if that ever stops being true.
    if (url.origin !== this.#origin) throw new Error('refusing to send the key outside baseUrl origin');
    return url.href;
  }

  async #call<T>(spec: CallSpec<T>, opts: CallOpts): Promise<T> {
    if (opts.requestId !== undefined && !isValidRequestId(opts.requestId)) {
      // The service would replace it, and the ledger's record of the call would point nowhere.
      throw new RangeError('requestId must be 1-64 characters of A-Z a-z 0-9 _ -');
    }
    const sentRequestId = opts.requestId ?? newRequestId();
    const headers: Record<string, string> = {
      'x-api-key': this.#key,
      'x-request-id': sentRequestId,
      accept: 'application/json',
    };
    if (spec.contentType) headers['content-type'] = spec.contentType;
    const req: WireRequest = { method: spec.method, url: this.#url(spec.path), headers };
    if (spec.body !== undefined) req.body = spec.body;

    const atMs = clock.now();
    // Before the deadline's timer: a ticket that cannot be written fails the call unsent.
    this.#ticket?.sending(atMs, spec.endpoint, sentRequestId);
    // Aborted by the caller's signal too (the deadline's `also`), as AbortSignal.any would.
    const deadline = clock.deadline(this.#timeoutMs, opts.signal);
    req.signal = deadline.signal;
    const record = (r: Omit<CallRecord, 'atMs' | 'method' | 'endpoint' | 'path' | 'sentRequestId' | 'durationMs'>) => {
      const rec: CallRecord = {
        atMs,
        method: spec.method,
        endpoint: spec.endpoint,
        path: spec.path,
        sentRequestId,
        durationMs: clock.now() - atMs,
        ...r,
      };
      this.#ticket?.answered(rec);
      this.#onCall?.(rec);
    };
    const base = { endpoint: spec.endpoint, method: spec.method, sentRequestId, secrets: [this.#key], keyEnv: this.#keyEnv };

    let res: WireResponse;
    try {
      res = await this.#transport.send(req);
    } catch (err) {
      const timedOut = deadline.signal.aborted && !opts.signal?.aborted;
      deadline.clear();
      const te = toTransportError(err, true, req.signal.aborted);
      const c = te.sent ? OUTCOME_UNKNOWN : NOT_SENT;
      const why = timedOut ? `no answer within ${this.#timeoutMs} ms` : te.message;
      const error = apiError({ ...base, classification: c, transportCode: te.transportCode, reason: `${c.reason}: ${why}` });
      record({
        httpStatus: null,
        businessCode: null,
        requestId: null,
        errorCode: error.answer,
        sent: te.sent,
        retryAfterMs: null,
        rateLimit: null,
      });
      throw error;
    }
    deadline.clear();

    const now = clock.now();
    const retryAfterMs = parseRetryAfter(getHeader(res.headers, 'retry-after'), now);
    const rateLimit = rateLimitFrom(res.headers, now);
    let body: unknown = undefined;
    try {
      body = parseJsonKeepingBigInts(res.body.toString('utf8'));
    } catch {
      // Left undefined: non-2xx bodies from proxies are often HTML; 2xx ones are malformed.
    }
    const envelope = parseEnvelope(body);
    const serverRequestId = envelope?.requestId || getHeader(res.headers, 'x-request-id');
    const requestId = serverRequestId ? sanitize(serverRequestId, [this.#key], 128) : null;
    const businessCode = envelope?.code ?? null;

    let c: Classification;
    let reason: string | undefined;
    let value: T | undefined;
    c = classify(res.status, businessCode);
    if (c.kind === 'stop-config') {
      reason = redirectReason(res.status, getHeader(res.headers, 'location'), req.url);
    } else {
      if (c.kind === 'ok') {
        try {
          value = spec.parse(envelope?.data, requestId);
        } catch (err) {
          c = MALFORMED_RESPONSE;
          reason = err instanceof ShapeError ? `${c.reason}: ${err.message}` : c.reason;
        }
      }
    }

    const common = { httpStatus: res.status, businessCode, requestId, sent: true, retryAfterMs, rateLimit };
    if (c.kind === 'ok') {
      record({ ...common, errorCode: null });
      return value as T;
    }
    const error = apiError({
      ...base,
      ...common,
      classification: c,
      serverMessage: envelope?.message ?? null,
      ...(reason === undefined ? {} : { reason }),
    });
    record({ ...common, errorCode: error.answer });
    throw error;
  }
}
