import { request } from 'undici';
import { clock } from '../../clock.js';
import type { BodySource } from '../../outputs/atomic.js';
import { EXTENSIONS, sniffImage } from '../../spec/images.js';
import { DownloadError, OutputWriteError } from '../../errors.js';

export interface FetchedResult {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  /**
   * The body: a stream of chunks (undici), or a Buffer when the whole body is at hand (the
   * in-process simulator), which is read as a stream of one chunk. A 200's stream is read
   * to its end or dropped by darkroom; other statuses' bodies are the fetcher's to drop.
   */
  readonly body: Buffer | AsyncIterable<Uint8Array>;
}

/** GET a result URL with no headers of ours at all: nothing secret can follow it anywhere (L5). */
export type ResultFetch = (url: URL, signal: AbortSignal, timeoutMs: number) => Promise<FetchedResult>;

const undiciFetch: ResultFetch = async (url, signal, timeoutMs) => {
  const res = await request(url, { method: 'GET', signal, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
  if (res.statusCode !== 200) {
    await res.body.dump();
    return { status: res.statusCode, headers: res.headers, body: Buffer.alloc(0) };
  }
  return { status: res.statusCode, headers: res.headers, body: res.body };
};

export interface ResultOptions {
  /** Result URLs must be https unless the service itself is plain http (a local simulator). */
  readonly allowHttp: boolean;
  /** A whole download's deadline (headers and every byte of the body), not only an idle timeout. */
  readonly deadlineMs: number;
  /** Aborts downloads in flight (an interrupt's grace period is over). */
  readonly abort?: AbortSignal | undefined;
  readonly fetch?: ResultFetch | undefined;
}

/** A result whose status and first bytes are checked, its body still to be read (once). */
export interface OpenedResult extends BodySource {
  /** The extension of its real type, from its magic bytes. */
  readonly ext: string;
}

/** What a result host answers for a link that has expired (the spec names none; these are what CDNs use). */
const EXPIRED_STATUSES = new Set([403, 404, 410]);

/** Enough of the body to tell JPG, PNG and WEBP apart (WEBP needs 12 bytes). */
const HEAD_BYTES = 16;

/**
 * Fetch a result and hand it to `use` as a stream, with today's checks made on the stream:
 * the HTTP status (3xx followed, 403/404/410 an expired link), the magic bytes from the
 * first chunk, the length against Content-Length once the last byte is in (`check`, called
 * by the writer). The deadline covers the whole of it, `use` included; when `use` returns
 * or throws, whatever is unread is dropped.
 */
export async function withResult<T>(url: string, opts: ResultOptions, use: (r: OpenedResult) => Promise<T>): Promise<T> {
  let current = new URL(url);
  // Aborted by the run's signal too (the deadline's `also`), as AbortSignal.any would.
  const deadline = clock.deadline(opts.deadlineMs, opts.abort);
  let open: AsyncIterator<Uint8Array> | undefined;
  try {
    for (let hop = 0; hop < 5; hop++) {
      if (current.protocol !== 'https:' && !(opts.allowHttp && current.protocol === 'http:')) {
        throw new DownloadError('INSECURE_RESULT_URL', `result URL is not https: ${current.origin}`, true);
      }
      const res = await clock.io((opts.fetch ?? undiciFetch)(current, deadline.signal, opts.deadlineMs));
      if (res.status >= 300 && res.status < 400 && res.headers.location) {
        current = new URL(String(res.headers.location), current);
        continue;
      }
      if (EXPIRED_STATUSES.has(res.status)) {
        throw new DownloadError('RESULT_EXPIRED', `result URL expired (HTTP ${res.status} from ${current.origin})`, false);
      }
      if (res.status !== 200) throw new DownloadError('RESULT_HTTP', `result host answered HTTP ${res.status}`, false);
      const header = res.headers['content-length'];
      const declared = header === undefined ? null : Number(header);
      const check = (total: number) => {
        if (declared !== null && declared !== total) {
          throw new DownloadError('RESULT_TRUNCATED', `result truncated: ${total} of ${declared} bytes`, false);
        }
      };
      let head: Buffer;
      let rest: AsyncIterator<Uint8Array> | null = null;
      if (Buffer.isBuffer(res.body)) {
        head = res.body;
        check(head.length);
      } else {
        open = res.body[Symbol.asyncIterator]();
        const chunks: Buffer[] = [];
        let got = 0;
        let done = false;
        while (got < HEAD_BYTES) {
          const next = await open.next();
          if (next.done) {
            done = true;
            break;
          }
          chunks.push(Buffer.from(next.value.buffer, next.value.byteOffset, next.value.byteLength));
          got += next.value.byteLength;
        }
        head = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
        if (!done) rest = open;
      }
      const type = sniffImage(head.subarray(0, HEAD_BYTES));
      if (type === null) throw new DownloadError('RESULT_NOT_IMAGE', 'result is not a JPG, PNG or WEBP image', false);
      return await use({ head, rest, check, ext: EXTENSIONS[type] });
    }
    throw new DownloadError('RESULT_REDIRECTS', 'result URL redirected too many times', false);
  } catch (err) {
    if (deadline.signal.aborted && !opts.abort?.aborted && !(err instanceof DownloadError) && !(err instanceof OutputWriteError)) {
      throw new DownloadError('DOWNLOAD_DEADLINE', `download did not finish within its deadline of ${opts.deadlineMs} ms`, false);
    }
    throw err;
  } finally {
    deadline.clear();
    // Drop what is unread (an error midway, a check that failed): undici's stream is destroyed.
    if (open) await open.return?.().catch(() => undefined);
  }
}
