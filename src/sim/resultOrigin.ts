/**
 * The result origin: the host that serves uploads' images and tasks' results (a CDN apart
 * from the API, server.ts), and the result URLs a poll hands out. Decisions:
 * - generateUrl is null until SUCCESS; results are computed on first download (sharp,
 *   unless `processing: 'passthrough'`) and the same task always serves the same bytes.
 * - A result URL may expire, by age or at random at a GET (expiredResultUrl, faults.ts);
 *   the next poll hands out `?v=N+1`. A GET may be cut short (truncatedDownload), never
 *   twice in a row for one URL.
 * - The API key is never needed here; a request that carries one is recorded as a leak.
 */
import { fingerprintKey } from '../spec/key.js';
import { clock } from '../clock.js';
import type { AuditRecorder } from './audit.js';
import type { FaultInjector } from './faultInjector.js';
import { CONTENT_TYPES, EXTENSIONS, type ImageType } from '../spec/images.js';
import type { ResolvedSimOptions } from './options.js';
import { processImage } from './processing.js';
import { plain, type SimRequest, type SimResponse } from './responses.js';
import { pathOf, RESULT_PATH_RE, UPLOAD_PATH_RE, versionOf } from './routes.js';
import type { TaskBook } from './taskBook.js';
import { statusAt, type Task, type TaskInput } from './tasks.js';
import type { UploadStore } from './uploads.js';

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

type OriginConfig = Pick<ResolvedSimOptions, 'resultOrigin' | 'processing' | 'faults'>;

export class ResultOrigin {
  private readonly results = new Map<string, Promise<Buffer>>();
  private readonly urls = new Map<string, UrlState>();
  /** Result URLs (path and version) whose last GET was truncated. */
  private readonly truncatedLast = new Set<string>();

  constructor(
    private readonly cfg: OriginConfig,
    private readonly tasks: TaskBook,
    private readonly uploads: UploadStore,
    private readonly faults: FaultInjector,
    private readonly recorder: AuditRecorder,
  ) {}

  async handle(req: SimRequest): Promise<SimResponse> {
    const leaked = req.headers['x-api-key'];
    if (leaked !== undefined) this.recorder.keyLeak(req.path, clock.now(), fingerprintKey(leaked));
    const method = req.method.toUpperCase();
    if (method !== 'GET' && method !== 'HEAD') return plain(405, 'method not allowed\n', { allow: 'GET, HEAD' });
    const path = pathOf(req.path);
    const res = RESULT_PATH_RE.exec(path);
    if (res) return this.serveResult(res[1]!, res[2]!, versionOf(req.path), method);
    const up = UPLOAD_PATH_RE.exec(path);
    const u = up ? this.uploads.served(up[1]!) : undefined;
    if (!u || EXTENSIONS[u.type] !== up![2]) return plain(404, 'not found\n');
    return imageAnswer(u.bytes, u.type, method);
  }

  /** A poll hands out a new URL once the current one has expired. */
  currentUrl(task: Task, now: number): string {
    const url = this.urlState(task);
    if (this.expired(url, now) || url.statusOf.has(url.version)) {
      url.version++;
      url.issuedAt = now;
      url.expiredNow = false;
    }
    const base = `${this.cfg.resultOrigin}/results/${task.taskId}.${EXTENSIONS[task.resultType]}`;
    return url.version === 1 ? base : `${base}?v=${url.version}`;
  }

  private async serveResult(taskId: string, ext: string, version: number | undefined, method: string): Promise<SimResponse> {
    const now = clock.now();
    const t = this.tasks.live(taskId);
    if (!t || EXTENSIONS[t.resultType] !== ext || statusAt(t, now) !== 'SUCCESS') return plain(404, 'not found\n');
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
    const answer = imageAnswer(bytes, t.resultType, method);
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
      case 'upload':
        return this.uploads.bytesOf(input.uploadId);
      case 'result': {
        const t = this.tasks.get(input.taskId);
        if (!t) throw new Error(`task ${input.taskId} vanished`);
        return this.resultBytes(t);
      }
    }
  }
}

function imageAnswer(bytes: Buffer, type: ImageType, method: string): SimResponse {
  return {
    status: 200,
    headers: { 'content-type': CONTENT_TYPES[type], 'content-length': String(bytes.length) },
    body: method === 'HEAD' ? Buffer.alloc(0) : bytes,
  };
}
