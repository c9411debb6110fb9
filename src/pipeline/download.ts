import { randomUUID } from 'node:crypto';
import { closeSync, constants, existsSync, fsyncSync, mkdirSync, openSync, readdirSync, realpathSync, renameSync, rmSync, writeSync } from 'node:fs';
import path from 'node:path';
import { request } from 'undici';
import { clock } from '../clock.js';
import { crashPoint, type ItemRow, type Ledger } from '../ledger/index.js';
import type { Logger } from '../log.js';
import { fullJitter } from '../scheduler/backoff.js';
import { EXTENSIONS, sniffImage } from './inspect.js';
import { checkTargets, outputTargets, writeOtherOutputs, type NamingOptions } from './naming.js';

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
  /** Aborts downloads in flight (an interrupt's grace period is over); they are retried next run. */
  readonly abort?: AbortSignal;
  /** output.layout, output.pattern, sidecars, intermediates (naming.ts); mirror `{name}.{ext}` when absent. */
  readonly naming?: NamingOptions;
}

/**
 * Result URLs of one task that may expire before darkroom gets the file. Each expiry is
 * answered by a fresh poll for a new URL; past this the photo fails, as the service keeps
 * handing out URLs that do not work.
 */
export const MAX_URL_REFRESHES = 3;

/** What a result host answers for a link that has expired (the spec names none; these are what CDNs use). */
const EXPIRED_STATUSES = new Set([403, 404, 410]);

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
export async function downloadStage(ledger: Ledger, item: ItemRow, opts: DownloadOptions): Promise<'done' | 'retry' | 'refresh' | 'failed'> {
  let claimed = ledger.outputs.start(item);
  try {
    const { bytes, ext } = await fetchResult(claimed.result_url!, opts);
    // Every name of the photo gets an output (naming.ts); the first is the item's own.
    const targets = outputTargets(ledger, claimed, ext, opts.outputDir, opts.naming);
    const target = targets[0]!.path;
    checkTargets(ledger, claimed, targets.slice(1));
    claimed = ledger.identity.adoptOutput(claimed, target);
    const owner = ledger.outputs.ownerOf(target);
    if (owner !== undefined && owner.id !== claimed.id) {
      throw new DownloadError(
        'DARKROOM_OUTPUT_TAKEN',
        `${target} is the output of ${owner.rel_path} already (two inputs differ only in their extension); rename one of them and run again`,
        true,
      );
    }
    if (owner === undefined && existsSync(target)) {
      throw new DownloadError(
        'DARKROOM_OUTPUT_EXISTS',
        `${target} already exists and was not written by this ledger; move it away and run again`,
        true,
      );
    }
    // Claimed before the rename: a crash between the rename and `done` leaves a file this
    // item owns, which the next run overwrites with the same bytes instead of refusing.
    // The claim is one guarded statement, so two downloads racing for a path cannot both win.
    const rival = ledger.outputs.claim(claimed, target);
    if (rival !== undefined) {
      throw new DownloadError('DARKROOM_OUTPUT_TAKEN', `${target} is the output of ${rival.rel_path} already (two inputs differ only in their extension); rename one of them and run again`, true);
    }
    claimed = { ...claimed, output_path: target };
    await writeAtomically(target, bytes, opts.outputDir);
    crashPoint('output');
    await writeOtherOutputs(ledger, claimed, { bytes, ext }, targets, {
      outputDir: opts.outputDir,
      naming: opts.naming,
      log: opts.log,
      write: (t, b) => writeAtomically(t, b, opts.outputDir),
      fetch: (u) => fetchResult(u, opts),
    });
    ledger.outputs.done(claimed, target);
    return 'done';
  } catch (err) {
    const e = err instanceof DownloadError ? err : new DownloadError('DARKROOM_DOWNLOAD_FAILED', String((err as Error).message ?? err), false);
    if (opts.abort?.aborted) {
      // Interrupted, not failed: the next run downloads it again, with no retry spent.
      ledger.outputs.interrupted(claimed);
      return 'retry';
    }
    opts.log.warn({ item: item.id, code: e.code }, e.message);
    if (e.code === 'DARKROOM_RESULT_EXPIRED') {
      const refreshes = ledger.outputs.urlRefreshes(claimed);
      if (refreshes < MAX_URL_REFRESHES && claimed.task_id !== null) {
        ledger.outputs.refreshUrl(claimed, `${e.message}; polling task ${claimed.task_id} for a fresh URL`, clock.now());
        return 'refresh';
      }
      ledger.outputs.failed(claimed, `download of ${claimed.rel_path} failed: ${e.message}, after ${refreshes} fresh URL(s) from the service`);
      return 'failed';
    }
    if (e.permanent || claimed.retries >= opts.maxRetries) {
      ledger.outputs.failed(claimed, `download of ${claimed.rel_path} failed: ${e.message}`);
      return 'failed';
    }
    ledger.outputs.retryLater(claimed, e.message, clock.now() + 1000 + fullJitter(claimed.retries, opts.random));
    return 'retry';
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
  // Aborted by the run's signal too (the deadline's `also`), as AbortSignal.any would.
  const deadline = clock.deadline(opts.deadlineMs, opts.abort);
  const signal = deadline.signal;
  try {
    for (let hop = 0; hop < 5; hop++) {
      if (current.protocol !== 'https:' && !(opts.allowHttp && current.protocol === 'http:')) {
        throw new DownloadError('DARKROOM_INSECURE_RESULT_URL', `result URL is not https: ${current.origin}`, true);
      }
      let res: FetchedResult;
      try {
        res = await clock.io((opts.fetch ?? undiciFetch)(current, signal, opts.deadlineMs));
      } catch (err) {
        if (deadline.signal.aborted && !opts.abort?.aborted) {
          throw new DownloadError('DARKROOM_DOWNLOAD_DEADLINE', `download did not finish within its deadline of ${opts.deadlineMs} ms`, false);
        }
        throw err;
      }
      if (res.status >= 300 && res.status < 400 && res.headers.location) {
        current = new URL(String(res.headers.location), current);
        continue;
      }
      if (EXPIRED_STATUSES.has(res.status)) {
        throw new DownloadError('DARKROOM_RESULT_EXPIRED', `result URL expired (HTTP ${res.status} from ${current.origin})`, false);
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

/**
 * Synchronous on purpose. The async version (fs/promises: open, write, fsync, close,
 * rename, open folder, fsync, close) is eight thread-pool round trips: 0.2 ms of CPU on
 * tmpfs and 1–2 ms of wall-clock time on a busy 2-core machine, against 0.035 ms for the
 * same calls made directly; a simulation's virtual clock waits for every one of them
 * (W1: 10,000 outputs). On a real disk the fsyncs dominate either way, and they block the
 * process no longer than the ledger's own fsync on the `done` commit that follows, at a
 * few photos a minute (the service's call limits): no poll is late by more than that.
 * One clock.ioTurn, not inline: the write still ends after the events already queued, as
 * the thread-pool version did, so a simulation's order of events is what it was.
 */
export function writeAtomically(target: string, bytes: Buffer, outputDir: string): Promise<void> {
  return clock.ioTurn(() => writeAtomicallyNow(target, bytes, outputDir));
}

function writeAtomicallyNow(target: string, bytes: Buffer, outputDir: string): void {
  const dir = path.dirname(target);
  // outputPathFor checked the names; a symlink inside the output folder could still lead
  // the write (or the creation of folders) elsewhere, so the real path of the deepest
  // folder that exists is checked before anything is created, and the folder after.
  mkdirSync(outputDir, { recursive: true });
  let existing = dir;
  while (!existsSync(existing) && existing !== path.dirname(existing)) existing = path.dirname(existing);
  assertInside(existing, outputDir, dir);
  mkdirSync(dir, { recursive: true });
  assertInside(dir, outputDir, dir);
  // Eight random hex digits, as randomBytes(4) gave, from randomUUID's pooled entropy (a
  // tenth of the cost: randomBytes asks the kernel every time).
  const temp = path.join(dir, `.${path.basename(target)}.${randomUUID().slice(0, 8)}${TEMP_SUFFIX}`);
  const fd = openSync(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o644);
  try {
    for (let at = 0; at < bytes.length; ) at += writeSync(fd, bytes, at, bytes.length - at);
    fsyncSync(fd);
  } catch (err) {
    closeSync(fd);
    rmSync(temp, { force: true });
    throw err;
  }
  closeSync(fd);
  crashPoint('download');
  renameSync(temp, target);
  const dfd = openSync(dir, 'r');
  try {
    fsyncSync(dfd);
  } finally {
    closeSync(dfd);
  }
}

function assertInside(folder: string, outputDir: string, shown: string): void {
  const real = realpathSync.native(folder);
  const back = path.relative(realpathSync.native(outputDir), real);
  if (back.startsWith('..') || path.isAbsolute(back)) {
    throw new DownloadError('DARKROOM_OUTPUT_ESCAPE', `${shown} leads outside the output folder (to ${real}) through a symbolic link`, true);
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
