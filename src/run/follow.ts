import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { clock, type TimerHandle } from '../clock.js';
import { inputMatch } from '../inputs/follow/match.js';
import { Settler, type FileStamp, type Taken } from '../inputs/follow/settle.js';
import { watchFolder, type FolderWatch } from '../inputs/follow/watch.js';
import { lookAtNamed, recordNamed } from '../inputs/discover.js';
import { skipSameFile } from '../inputs/sameFile.js';
import { readUrlList } from '../inputs/urls.js';
import { fileSystemOf } from '../ledger/fsType.js';
import type { RunContext } from './context.js';
import { stampNewPhotos } from './stepsCheck.js';

/** How a followed folder is watched: by the file system's events, or by a scan every `input.poll`. */
export type FollowHow = 'events' | 'poll';

/** Events on a local disk; a scan on a network mount, where another machine's writes send none (or as input.watch says). */
export function followHow(ctx: Pick<RunContext, 'config'>): { how: FollowHow; fs: string } {
  const { input } = ctx.config;
  const fs = fileSystemOf(input.dir ?? input.urls ?? '.');
  if (input.watch !== 'auto') return { how: input.watch, fs: fs.name };
  return { how: fs.network ? 'poll' : 'events', fs: fs.name };
}

/**
 * `darkroom run --follow`: after the photos already there, input.dir is watched (and the URL
 * list looked at) and each new photo is recorded once it is whole, while the lanes work
 * (docs/ARCHITECTURE.md § Flow). The watcher (inputs/follow/watch.ts) names what changed;
 * the settler (inputs/follow/settle.ts) holds each file until its size and mtime have kept
 * still for input.settle and it decodes in full; then it is recorded as discovery records
 * (add-only: nothing is marked gone), its outputs named, a `found` event sent, and the lanes
 * woken. While it follows, the lanes do not end when their queues are empty
 * (RunControl.producing): only a stop does (an interrupt, a limit, the account).
 */
export class Follower {
  private readonly settler: Settler;
  private watch: FolderWatch | undefined;
  private urlTimer: TimerHandle | undefined;
  private urlStamp: { stamp: FileStamp | null; stillSince: number } | undefined;
  private stopped = false;
  readonly how: FollowHow;
  readonly fs: string;

  constructor(private readonly ctx: RunContext) {
    const { config, ledger, log } = ctx;
    const dir = config.input.dir ?? '';
    const match = inputMatch(config);
    ({ how: this.how, fs: this.fs } = followHow(ctx));
    this.settler = new Settler(
      {
        stat: (rel) => clock.ioTurn(() => stampOf(path.join(dir, rel))),
        list: (relDir) => clock.ioTurn(() => filesIn(dir, relDir)),
        wanted: match.wanted,
        known: (rel, s) => ledger.inputs.cachedHash(rel, s.size, Math.floor(s.mtimeMs)) !== undefined,
        named: (rel) => ledger.inputs.hasFile(rel),
        take: (rels, asTheyAre) => this.take(rels, asTheyAre),
        passedOver: (rel, why) => log.info({ file: rel, why }, `passed over for now: ${rel} (${why})`),
        count: (n) => ledger.following.settling(n),
        failed: (err) => ctx.control.crashed(err),
      },
      { settleMs: config.input.settleMs },
    );
  }

  /**
   * Start following: the row `status` reads, the watcher, the files discovery left for later
   * (`deferred`: still being written when the run started), and the URL list's watch.
   * Until `stop()`, the lanes keep going when their queues are empty.
   */
  async start(deferred: readonly string[]): Promise<void> {
    const { ctx } = this;
    const { config, ledger, log, control } = ctx;
    control.produce(true);
    // A stop (an interrupt, a limit, the account) ends the following: the lanes then end with the work recorded.
    control.onWake(() => {
      if (control.stopped || control.noCreates) void this.stop();
    });
    ledger.following.begin(process.pid, this.how, config.input.pollMs);
    for (const rel of deferred) this.settler.file(rel);
    const dir = config.input.dir;
    if (dir !== null) {
      const match = inputMatch(config);
      const watch = (ctx.request.seams?.watchFolder ?? watchFolder)(
        dir,
        { poll: this.how === 'poll', pollMs: config.input.pollMs, skipFolder: match.skipFolder },
        {
          file: (rel) => this.settler.file(rel),
          folder: (rel) => this.settler.folder(rel),
          error: (err) => log.warn({ err: err.message }, `watching ${dir}: ${err.message}`),
        },
      );
      this.watch = watch;
      await clock.hold(watch.ready);
      // What arrived between discovery's walk and the watch: every folder listed once (names only).
      for (const rel of foldersUnder(dir, match.skipFolder)) this.settler.folder(rel);
    }
    if (config.input.urls !== null) this.watchUrls(config.input.urls);
    log.info(
      { how: this.how, fs: this.fs, settleMs: config.input.settleMs, pollMs: config.input.pollMs },
      this.how === 'poll'
        ? `following ${dir ?? config.input.urls}: scanned every ${config.input.pollMs / 1000} s (${this.fs}); a new photo is taken once it has kept still for ${config.input.settleMs / 1000} s and decodes`
        : `following ${dir ?? config.input.urls}: new photos taken once they have kept still for ${config.input.settleMs / 1000} s and decode`,
    );
  }

  /** Stop following: no more looks; the lanes end with the work recorded. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.settler.close();
    if (this.urlTimer) clock.clearTimer(this.urlTimer);
    this.ctx.ledger.following.end();
    this.ctx.control.produce(false);
    if (this.watch) await clock.hold(this.watch.close());
  }

  /** A batch of files that kept still: looked at, the whole ones recorded, the others left for later. */
  private async take(rels: readonly string[], asTheyAre: ReadonlySet<string>): Promise<Taken> {
    const { ctx } = this;
    const { ledger, log, control, config } = ctx;
    if (control.noCreates || this.stopped) return { notYet: [] };
    const seen = await clock.hold(lookAtNamed(config, ledger, rels));
    const notYet = seen.found.filter((f) => f.skipReason !== null && !asTheyAre.has(f.relPath));
    const whole = seen.found.filter((f) => f.skipReason === null || asTheyAre.has(f.relPath));
    if (whole.length > 0) await this.record({ ...seen, found: whole }, []);
    for (const f of whole) log.info({ file: f.relPath, bytes: f.sizeBytes, skipped: f.skipReason ?? undefined }, `taken: ${f.relPath}`);
    return { notYet: notYet.map((f) => ({ relPath: f.relPath, reason: `does not decode yet: ${f.skipReason}` })) };
  }

  /** Recorded as discovery records (add-only), the outputs named, the `found` events sent, the lanes woken. */
  private async record(
    seen: Parameters<typeof recordNamed>[1],
    urls: Parameters<typeof recordNamed>[2],
    freshUrls: Parameters<typeof recordNamed>[2] = [],
  ): Promise<void> {
    const { ctx } = this;
    const { ledger, config, outputs, events, control } = ctx;
    const r = recordNamed(ledger, seen, urls, { keyFps: ctx.keys.map((k) => k.fingerprint), adjust: skipSameFile });
    await clock.hold(outputs.afterDiscovery());
    stampNewPhotos(config, ledger);
    if (r.identity.added + r.identity.changed > 0) ledger.following.found();
    for (const f of r.found) events.found({ input: f.relPath, sizeBytes: f.sizeBytes, skipped: f.skipReason });
    for (const u of freshUrls) events.found({ input: u.name, sizeBytes: null, skipped: null });
    events.pull();
    control.wake();
  }

  /** The URL list: read again once a change to it has kept still for input.settle; its new lines recorded. */
  private watchUrls(file: string): void {
    const every = Math.min(this.ctx.config.input.settleMs, this.ctx.config.input.pollMs);
    const look = async () => {
      this.urlTimer = undefined;
      if (this.stopped) return;
      const stamp = stampOf(file);
      const now = clock.now();
      const last = this.urlStamp;
      const same = last !== undefined && sameStamp(last.stamp, stamp);
      if (!same) this.urlStamp = { stamp, stillSince: now };
      else if (last.stillSince > -Infinity && now - last.stillSince >= this.ctx.config.input.settleMs && stamp !== null) {
        this.urlStamp = { stamp, stillSince: -Infinity };
        try {
          const urls = readUrlList(file);
          const fresh = urls.filter((u) => !this.ctx.ledger.inputs.hasUrl(u.url, u.name));
          if (fresh.length > 0) await this.record({ found: [], decodes: { decoded: 0, refused: 0, known: 0, ms: 0 } }, urls, fresh);
        } catch (err) {
          this.ctx.log.warn({ file }, `passed over for now: ${file} (${(err as Error).message})`);
        }
      }
      if (!this.stopped) this.urlTimer = clock.setTimer(() => void look().catch((err) => this.ctx.control.crashed(err)), every);
    };
    // The list as the run's discovery read it is the starting point: only a change is looked at.
    this.urlStamp = { stamp: stampOf(file), stillSince: -Infinity };
    this.urlTimer = clock.setTimer(() => void look().catch((err) => this.ctx.control.crashed(err)), every);
  }
}

function sameStamp(a: FileStamp | null, b: FileStamp | null): boolean {
  return a === b || (a !== null && b !== null && a.size === b.size && a.mtimeMs === b.mtimeMs);
}

/** A file's size and mtime, or null when it is not there or not a file. */
function stampOf(file: string): FileStamp | null {
  try {
    const s = statSync(file);
    return s.isFile() ? { size: s.size, mtimeMs: s.mtimeMs } : null;
  } catch {
    return null;
  }
}

/** The files (and links) directly in a folder under input.dir, by path under it; empty when it is gone. */
function filesIn(dir: string, relDir: string): string[] {
  try {
    return readdirSync(path.join(dir, relDir), { withFileTypes: true })
      .filter((d) => d.isFile() || d.isSymbolicLink())
      .map((d) => (relDir === '' ? d.name : `${relDir}/${d.name}`));
  } catch {
    return [];
  }
}

/** Every folder under input.dir but the skipped ones, by path under it ('' for input.dir itself). */
function foldersUnder(dir: string, skip: (relDir: string) => boolean): string[] {
  const out: string[] = [];
  const walk = (rel: string, depth: number) => {
    out.push(rel);
    if (depth > 64) return;
    let entries;
    try {
      entries = readdirSync(path.join(dir, rel), { withFileTypes: true });
    } catch {
      return;
    }
    for (const d of entries) {
      if (!d.isDirectory()) continue;
      const r = rel === '' ? d.name : `${rel}/${d.name}`;
      if (!skip(r)) walk(r, depth + 1);
    }
  };
  walk('', 0);
  return out;
}
