import { randomBytes } from 'node:crypto';
import { constants, existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { open, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { request } from 'undici';
import { clock } from '../clock.js';
import type { ItemRow, Ledger } from '../ledger/index.js';
import type { Logger } from '../log.js';
import { fullJitter } from '../scheduler/backoff.js';
import { EXTENSIONS, sniffImage } from './inspect.js';

export const TEMP_SUFFIX = '.darkroom-tmp';

export interface DownloadOptions {
  readonly outputDir: string;
  /** Result URLs must be https unless the service itself is plain http (a local simulator). */
  readonly allowHttp: boolean;
  /** A whole download's deadline, not only an idle timeout. */
  readonly deadlineMs: number;
  readonly maxRetries: number;
  readonly random: () => number;
  readonly log: Logger;
  /** How result URLs are fetched; the in-process simulator supplies its own. */
  readonly fetch?: ResultFetch;
}

export interface FetchedResult {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: Buffer;
}

/** GET a result URL with no headers of ours at all: nothing secret can follow it anywhere (L5). */
export type ResultFetch = (url: URL, signal: AbortSignal, timeoutMs: number) => Promise<FetchedResult>;

export const undiciFetch: ResultFetch = async (url, signal, timeoutMs) => {
  const res = await request(url, { method: 'GET', signal, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
  if (res.statusCode !== 200) {
    await res.body.dump();
    return { status: res.statusCode, headers: res.headers, body: Buffer.alloc(0) };
  }
  return { status: res.statusCode, headers: res.headers, body: Buffer.from(await res.body.arrayBuffer()) };
};

export class DownloadError extends Error {
  override readonly name = 'DownloadError';
  constructor(
    readonly code: string,
    message: string,
    readonly permanent: boolean,
  ) {
    super(message);
  }
}

/**
 * succeeded → downloading → done (L4): the result goes to a temp file in the output's
 * own folder, is fsynced and checked (status, length, image bytes), renamed into place,
 * and the folder fsynced, before the ledger says done. Result URLs are fetched with no
 * key header (L5): they are public and on another host.
 */
export async function downloadStage(ledger: Ledger, item: ItemRow, opts: DownloadOptions): Promise<void> {
  const claimed = ledger.outputs.start(item);
  try {
    const { bytes, ext } = await fetchResult(claimed.result_url!, opts);
    const target = outputPathFor(opts.outputDir, claimed.rel_path, ext);
    if (existsSync(target) && !ledger.outputs.isOwnOutput(target)) {
      throw new DownloadError(
        'DARKROOM_OUTPUT_EXISTS',
        `${target} already exists and was not written by this ledger; move it away and run again`,
        true,
      );
    }
    await clock.io(writeAtomically(target, bytes));
    ledger.outputs.done(claimed, target);
  } catch (err) {
    const e = err instanceof DownloadError ? err : new DownloadError('DARKROOM_DOWNLOAD_FAILED', String((err as Error).message ?? err), false);
    if (e.permanent || claimed.retries >= opts.maxRetries) {
      ledger.outputs.failed(claimed, `download of ${claimed.rel_path} failed: ${e.message}`);
    } else {
      ledger.outputs.retryLater(claimed, e.message, clock.now() + 1000 + fullJitter(claimed.retries, opts.random));
    }
    opts.log.warn({ item: item.id, code: e.code }, e.message);
  }
}

/** `<output.dir>/<rel dir>/<name>.<ext>`, refusing any path that would leave the output folder. */
export function outputPathFor(outputDir: string, relPath: string, ext: string): string {
  const parsed = path.posix.parse(relPath);
  const rel = path.join(...parsed.dir.split('/').filter(Boolean), `${parsed.name}.${ext}`);
  const target = path.resolve(outputDir, rel);
  const back = path.relative(path.resolve(outputDir), target);
  if (back.startsWith('..') || path.isAbsolute(back)) {
    throw new DownloadError('DARKROOM_OUTPUT_ESCAPE', `output path for ${relPath} would leave the output folder`, true);
  }
  return target;
}

async function fetchResult(url: string, opts: DownloadOptions): Promise<{ bytes: Buffer; ext: string }> {
  let current = new URL(url);
  const deadline = clock.deadline(opts.deadlineMs);
  try {
    for (let hop = 0; hop < 5; hop++) {
      if (current.protocol !== 'https:' && !(opts.allowHttp && current.protocol === 'http:')) {
        throw new DownloadError('DARKROOM_INSECURE_RESULT_URL', `result URL is not https: ${current.origin}`, true);
      }
      const res = await clock.io((opts.fetch ?? undiciFetch)(current, deadline.signal, opts.deadlineMs));
      if (res.status >= 300 && res.status < 400 && res.headers.location) {
        current = new URL(String(res.headers.location), current);
        continue;
      }
      if (res.status !== 200) {
        throw new DownloadError('DARKROOM_RESULT_HTTP', `result host answered HTTP ${res.status}`, false);
      }
      const bytes = res.body;
      const declared = res.headers['content-length'];
      if (declared !== undefined && Number(declared) !== bytes.length) {
        throw new DownloadError('DARKROOM_RESULT_TRUNCATED', `result truncated: ${bytes.length} of ${declared} bytes`, false);
      }
      const type = sniffImage(bytes.subarray(0, 16));
      if (type === null) throw new DownloadError('DARKROOM_RESULT_NOT_IMAGE', 'result is not a JPG, PNG or WEBP image', false);
      return { bytes, ext: EXTENSIONS[type] };
    }
    throw new DownloadError('DARKROOM_RESULT_REDIRECTS', 'result URL redirected too many times', false);
  } finally {
    deadline.clear();
  }
}

async function writeAtomically(target: string, bytes: Buffer): Promise<void> {
  const dir = path.dirname(target);
  mkdirSync(dir, { recursive: true });
  const temp = path.join(dir, `.${path.basename(target)}.${randomBytes(4).toString('hex')}${TEMP_SUFFIX}`);
  const fh = await open(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o644);
  try {
    await fh.writeFile(bytes);
    await fh.sync();
  } catch (err) {
    await fh.close();
    await rm(temp, { force: true });
    throw err;
  }
  await fh.close();
  await rename(temp, target);
  const dh = await open(dir, 'r');
  try {
    await dh.sync();
  } finally {
    await dh.close();
  }
}

/** Remove temp files a killed run left behind; none of them carries an output's name. */
export function sweepTempFiles(outputDir: string): number {
  if (!existsSync(outputDir)) return 0;
  let removed = 0;
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile() && e.name.endsWith(TEMP_SUFFIX)) {
        rmSync(p, { force: true });
        removed++;
      }
    }
  };
  walk(outputDir);
  return removed;
}
