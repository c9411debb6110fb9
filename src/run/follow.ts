import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { clock, type TimerHandle } from '../clock.js';
import { inputMatch } from '../inputs/follow/match.js';
import { Settler, type FileStamp, type Taken } from '../inputs/follow/settle.js';
import { foldersUnder, watchFolder, type FolderWatch } from '../inputs/follow/watch.js';
import { lookAtNamed, recordBatch, type Found } from '../inputs/discover.js';
import type { SameFileCheck } from '../inputs/sameFile.js';
import { readUrlList, type UrlEntry } from '../inputs/urls.js';
import type { DiscoveryPass } from '../ledger/index.js';
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
 * `darkroom run --follow`: once the run's discovery has walked the folder, input.dir is
 * watched (and the URL list looked at) and each new photo is recorded once it is whole, while
 * the lanes work (docs/ARCHITECTURE.md § Flow). The watcher (inputs/follow/watch.ts) names what
 * changed; the settler (inputs/follow/settle.ts) holds each file until its size and mtime have
 * kept still for input.settle and it decodes in full; then it is recorded as the walk records
 * a batch (ledger/discovery.ts Discovery.follow: add-only, nothing marked gone), its outputs
 * named, a `found` event sent, and the lanes told (the run's PhotoSupply). It is the run's
 * producer that is never done: the supply ends, and the lanes with it, only when the run halts
 * the discovery (phases/drive.ts: an interrupt, a limit, the account, a full disk).
 */
export class Follower {
  private readonly settler: Settler;
  private readonly pass: DiscoveryPass;
  private watch: FolderWatch | undefined;
  private urlTimer: TimerHandle | undefined;
  private urlStamp: { stamp: FileStamp | null; stillSince: number } | undefined;
  private stopped = false;
  private stopping: Promise<void> | undefined;
  private readonly over: Promise<void>;
  private end = () => {};
  readonly how: FollowHow;
  readonly fs: string;

  constructor(
    private readonly ctx: RunContext,
    /** The walk's same-file check, carried on (inputs/sameFile.ts). */
    private readonly sameFile: SameFileCheck,
  ) {
    const { config, ledger, log } = ctx;
    const dir = config.input.dir ?? '';
    const match = inputMatch(config);
    ({ how: this.how, fs: this.fs } = followHow(ctx));
    this.pass = ledger.discovery.follow();
    this.over = new Promise((resolve) => (this.end = resolve));
    this.settler = new Settler(
      {
        stat: (rel) => clock.ioTurn(() => stampOf(path.join(dir, rel))),
        list: (relDir) => clock.ioTurn(() => filesIn(dir, relDir)),
        wanted: match.wanted,
        known: (rel, s) => ledger.inputs.hasFile(rel, { size: s.size, mtimeMs: Math.floor(s.mtimeMs) }),
        fresh: (rels) => {
          const current = ledger.inputs.currentFiles(rels);
          return rels.filter((rel) => !current.has(rel));
        },
        take: (rels, asTheyAre) => this.take(rels, asTheyAre),
        passedOver: (rel, why) => log.info({ file: rel, why }, `passed over for now: ${rel} (${why})`),
        count: (n) => ledger.following.settling(n),
        failed: (err) => ctx.control.crashed(err),
      },
      { settleMs: config.input.settleMs },
    );
  }

  /**
   * Follow until `stop()`: the row `status` reads, the watcher, the files the walk left for
   * later (`deferred`: still being written when the run started), and the URL list's watch.
   */
  async follow(deferred: readonly string[]): Promise<void> {
    const { config, ledger, log } = this.ctx;
    ledger.following.begin(process.pid, this.how, config.input.pollMs);
    for (const rel of deferred) this.settler.file(rel);
    const dir = config.input.dir;
    if (dir !== null) {
      const match = inputMatch(config);
      const watch = (this.ctx.request.seams?.watchFolder ?? watchFolder)(
        dir,
        {
          poll: this.how === 'poll',
          pollMs: config.input.pollMs,
          skipFolder: match.skipFolder,
          unwatched: match.outputFolder === null ? [] : [match.outputFolder],
        },
        {
          file: (rel) => this.settler.file(rel),
          folder: (rel) => this.settler.folder(rel),
          error: (err) => log.warn({ err: err.message }, `watching ${dir}: ${err.message}`),
        },
      );
      this.watch = watch;
      await clock.hold(watch.ready);
      // What arrived between the walk and the watch: every folder listed once (names only).
      if (!this.stopped) for (const rel of foldersUnder(dir, match.skipFolder)) this.settler.folder(rel);
      await this.settler.caughtUp();
    }
    if (config.input.urls !== null && !this.stopped) this.watchUrls(config.input.urls);
    log.info(
      { how: this.how, fs: this.fs, settleMs: config.input.settleMs, pollMs: config.input.pollMs },
      this.how === 'poll'
        ? `following ${dir ?? config.input.urls}: scanned every ${config.input.pollMs / 1000} s (${this.fs}); a new photo is taken once it has kept still for ${config.input.settleMs / 1000} s and decodes`
        : `following ${dir ?? config.input.urls}: new photos taken once they have kept still for ${config.input.settleMs / 1000} s and decode`,
    );
    await this.over;
  }

  /** Stop following: no more looks; `follow()` returns once the watcher is closed. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      this.stopped = true;
      this.settler.close();
      if (this.urlTimer) clock.clearTimer(this.urlTimer);
      this.ctx.ledger.following.end();
      try {
        if (this.watch) await clock.hold(this.watch.close());
      } finally {
        this.end();
      }
    })();
    return this.stopping;
  }

  /** A batch of files that kept still: looked at, the whole ones recorded, the others left for later. */
  private async take(rels: readonly string[], asTheyAre: ReadonlySet<string>): Promise<Taken> {
    const { ledger, log, config } = this.ctx;
    if (this.stopped) return { notYet: [] };
    const found = await clock.hold(lookAtNamed(config, ledger, rels));
    // Stopped while the files were read: nothing more is recorded (the next run finds them).
    if (this.stopped) return { notYet: [] };
    const notYet = found.filter((f) => f.skipReason !== null && !asTheyAre.has(f.relPath));
    const whole = found.filter((f) => f.skipReason === null || asTheyAre.has(f.relPath));
    if (whole.length > 0) await this.record(whole, []);
    for (const f of whole) log.info({ file: f.relPath, bytes: f.sizeBytes, skipped: f.skipReason ?? undefined }, `taken: ${f.relPath}`);
    return { notYet: notYet.map((f) => ({ relPath: f.relPath, reason: `does not decode yet: ${f.skipReason}` })) };
  }

  /**
   * Recorded as the walk records a batch (inputs/discover.ts recordBatch), its names given
   * their outputs' names before the lanes hear of it (synchronously), the `found` events sent;
   * then its new names of photos already done given their outputs.
   */
  private async record(files: Found[], urls: readonly UrlEntry[]): Promise<void> {
    const { ctx } = this;
    const { ledger, config, outputs, events, supply } = ctx;
    const keyFps = ctx.keys.map((k) => k.fingerprint);
    const { report, found } = recordBatch(ledger, this.pass, files, urls, { keyFps, adjust: this.sameFile });
    const pass = { ids: report.inputIds, gen: this.pass.gen };
    outputs.afterBatch(pass);
    stampNewPhotos(config, ledger);
    if (report.added + report.changed > 0) ledger.following.found();
    for (const f of found) events.found({ input: f.relPath, sizeBytes: f.sizeBytes, skipped: f.skipReason });
    for (const u of urls) events.found({ input: u.name, sizeBytes: null, skipped: null });
    events.pull();
    supply.more();
    await clock.hold(outputs.copyToNewNames(pass.ids));
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
          const fresh = readUrlList(file).filter((u) => !this.ctx.ledger.inputs.hasUrl(u.url, u.name));
          if (fresh.length > 0) await this.record([], fresh);
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
