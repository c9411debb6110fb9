import { clock, type TimerHandle } from '../../clock.js';

/** A file's size and modification time, as a stat gives them. */
export interface FileStamp {
  readonly size: number;
  readonly mtimeMs: number;
}

/** Of a batch handed to `take`: the files that were not whole yet, and why; the rest were recorded. */
export interface Taken {
  readonly notYet: readonly { readonly relPath: string; readonly reason: string }[];
}

/** What the settler reads and does, each given by the follower (run/follow.ts) and by tests. */
export interface SettleDeps {
  /** The file's stamp now, or null when it is not there (deleted, renamed away) or not a file. */
  stat(relPath: string): Promise<FileStamp | null>;
  /** The files directly in a folder under input.dir, by path; empty when it is gone. */
  list(relDir: string): Promise<string[]>;
  /** A file the job takes (include, exclude, hidden, not the output folder). */
  wanted(relPath: string): boolean;
  /** The ledger already has this name with this stamp: nothing new. */
  known(relPath: string, stamp: FileStamp): boolean;
  /**
   * Of a folder's files, those the ledger has no current name of (whatever its stamp): a
   * folder's listing passes the others by. One look at the ledger a folder, not one a file.
   */
  fresh(relPaths: readonly string[]): readonly string[];
  /**
   * Look at these files and record the whole ones (a discovery's look, decode included), and
   * those of `asTheyAre` whatever their look found (a file's last look: skipped, with its reason).
   */
  take(relPaths: readonly string[], asTheyAre: ReadonlySet<string>): Promise<Taken>;
  /** A file left for now, said once per cause: still changing, or its reason from `take`. */
  passedOver(relPath: string, why: string): void;
  /** The number of files waiting, whenever it changes. */
  count(n: number): void;
  /** What `take` threw: the follower stops. */
  failed(err: unknown): void;
}

export interface SettleOptions {
  /** How long a file's size and mtime must stay the same before it is taken (input.settle). */
  readonly settleMs: number;
  /** Files waiting at once; hints beyond it leave only their folder, listed when room frees. */
  readonly capacity?: number;
  /** Files handed to one `take`. */
  readonly batch?: number;
  /** Looks at a file that did not decode, at most this many; then it is recorded as it is (skipped, with its reason). */
  readonly tries?: number;
}

/** Enough for a card copied in at once; the rest wait as folders to list (a few bytes each). */
const CAPACITY = 10_000;
const BATCH = 200;
/** A file that does not decode is looked at again after settle × 4, × 16, then recorded as discovery would (skipped). */
const TRIES = 3;
/** The longest wait between two looks at a file that does not decode. */
const MAX_BACKOFF_MS = 15 * 60_000;

interface Waiting {
  stamp: FileStamp | null;
  /** Since when the stamp has not changed. */
  stillSince: number;
  /** When it is looked at next. */
  dueMs: number;
  /** Looks at it that found it not whole. */
  tries: number;
  /** Said once: it was seen growing. */
  toldGrowing: boolean;
}

/**
 * The files a followed folder brought, held until each is whole: its size and modification
 * time unchanged for `settleMs`, then looked at as discovery does (`take`: read, hashed,
 * decoded in full). A file that changes meanwhile starts its wait again; one that is gone
 * is forgotten (never uploaded); one that does not decode is looked at again later, and
 * only after `tries` looks is it recorded as it is (skipped, as discovery skips it).
 *
 * Memory is bounded: at most `capacity` files wait; a hint beyond that keeps only its
 * folder, listed again once room frees (the watcher's events name files; a folder's listing
 * finds any it could not keep). Time is the clock's only (src/clock.ts), so a simulation
 * drives it like the rest of the run.
 */
export class Settler {
  private readonly waiting = new Map<string, Waiting>();
  /** Folders to list: hinted by the watcher, or holding files the settler had no room for. */
  private readonly folders = new Set<string>();
  private timer: TimerHandle | undefined;
  private timerAt = Infinity;
  private busy = false;
  private again = false;
  private closed = false;
  private lastCount = -1;
  /** Who waits for every folder hinted so far to be listed (caughtUp). */
  private listedWaiters: (() => void)[] = [];
  private readonly capacity: number;
  private readonly batch: number;
  private readonly tries: number;

  constructor(
    private readonly deps: SettleDeps,
    private readonly opts: SettleOptions,
  ) {
    this.capacity = opts.capacity ?? CAPACITY;
    this.batch = opts.batch ?? BATCH;
    this.tries = opts.tries ?? TRIES;
  }

  /** Files waiting now (still changing, or not decoding yet). */
  get size(): number {
    return this.waiting.size;
  }

  /** Something happened to this file: it is looked at (now, unless it already waits). */
  file(relPath: string): void {
    if (this.closed || !this.deps.wanted(relPath)) return;
    const w = this.waiting.get(relPath);
    if (w) {
      // It changed: looked at now, so that its wait starts from this change (a stat, no more).
      w.dueMs = clock.now();
    } else if (this.waiting.size >= this.capacity) {
      this.folders.add(parentOf(relPath));
    } else {
      this.waiting.set(relPath, { stamp: null, stillSince: clock.now(), dueMs: clock.now(), tries: 0, toldGrowing: false });
    }
    this.counted();
    this.wakeAt(clock.now());
  }

  /** A folder to list: its files new to the ledger are looked at. */
  folder(relDir: string): void {
    if (this.closed) return;
    this.folders.add(relDir);
    this.wakeAt(clock.now());
  }

  /**
   * Resolves once every folder hinted so far has been listed (its new files waiting), or the
   * settler is closed: the follower's first look at the whole tree is over.
   */
  caughtUp(): Promise<void> {
    if (this.closed || (this.folders.size === 0 && !this.busy)) return Promise.resolve();
    return new Promise((resolve) => this.listedWaiters.push(resolve));
  }

  /** No more looks; what waits is forgotten (a later run finds it again). */
  close(): void {
    this.closed = true;
    for (const w of this.listedWaiters.splice(0)) w();
    if (this.timer) clock.clearTimer(this.timer);
    this.timer = undefined;
    this.waiting.clear();
    this.folders.clear();
  }

  private wakeAt(at: number): void {
    if (this.closed) return;
    if (this.busy) {
      this.again = true;
      return;
    }
    if (at >= this.timerAt) return;
    if (this.timer) clock.clearTimer(this.timer);
    this.timerAt = at;
    this.timer = clock.setTimer(
      () => {
        this.timer = undefined;
        this.timerAt = Infinity;
        void this.turn();
      },
      Math.max(0, at - clock.now()),
    );
  }

  /** One look at what is due: folders listed, files statted, the still ones taken. */
  private async turn(): Promise<void> {
    if (this.closed || this.busy) return;
    this.busy = true;
    this.again = false;
    try {
      await this.listFolders();
      if (this.folders.size === 0) for (const w of this.listedWaiters.splice(0)) w();
      const ready = await this.look(clock.now());
      for (let i = 0; i < ready.length && !this.closed; i += this.batch) await this.takeBatch(ready.slice(i, i + this.batch));
    } catch (err) {
      this.deps.failed(err);
      this.close();
      return;
    } finally {
      this.busy = false;
    }
    this.counted();
    let next = Infinity;
    for (const w of this.waiting.values()) next = Math.min(next, w.dueMs);
    if (this.again || (this.folders.size > 0 && this.waiting.size < this.capacity)) next = clock.now();
    if (next < Infinity) this.wakeAt(next);
  }

  private async listFolders(): Promise<void> {
    for (const dir of [...this.folders]) {
      if (this.waiting.size >= this.capacity || this.closed) return;
      this.folders.delete(dir);
      const listed = (await this.deps.list(dir)).filter((rel) => !this.waiting.has(rel) && this.deps.wanted(rel));
      for (const rel of this.deps.fresh(listed)) {
        if (this.waiting.size >= this.capacity) {
          this.folders.add(dir);
          return;
        }
        this.waiting.set(rel, { stamp: null, stillSince: clock.now(), dueMs: clock.now(), tries: 0, toldGrowing: false });
      }
    }
  }

  /** Each file due looked at: gone, changed (its wait starts again) or still long enough (returned). */
  private async look(now: number): Promise<string[]> {
    const ready: string[] = [];
    for (const [rel, w] of [...this.waiting]) {
      if (w.dueMs > now) continue;
      const stamp = await this.deps.stat(rel);
      if (this.closed) return [];
      // Gone before it was taken (deleted, renamed away): never uploaded.
      if (stamp === null) {
        this.waiting.delete(rel);
        continue;
      }
      const same = w.stamp !== null && w.stamp.size === stamp.size && w.stamp.mtimeMs === stamp.mtimeMs;
      // An empty file is one just made: it is never whole yet.
      if (!same || stamp.size === 0) {
        if (w.stamp !== null && !w.toldGrowing) {
          w.toldGrowing = true;
          this.deps.passedOver(rel, 'still growing');
        }
        w.stamp = stamp;
        w.stillSince = now;
        w.tries = 0;
        w.dueMs = now + this.opts.settleMs;
        continue;
      }
      if (now - w.stillSince < this.opts.settleMs && w.tries === 0) {
        w.dueMs = w.stillSince + this.opts.settleMs;
        continue;
      }
      if (this.deps.known(rel, stamp)) {
        this.waiting.delete(rel);
        continue;
      }
      ready.push(rel);
    }
    return ready;
  }

  private async takeBatch(batch: readonly string[]): Promise<void> {
    const last = new Set(batch.filter((rel) => (this.waiting.get(rel)?.tries ?? 0) + 1 >= this.tries));
    // The last look at a file that never decoded records it as it is, as discovery would.
    const { notYet } = await this.deps.take(batch, last);
    const held = new Map(notYet.map((n) => [n.relPath, n.reason]));
    const now = clock.now();
    for (const rel of batch) {
      const w = this.waiting.get(rel);
      const reason = held.get(rel);
      if (!w) continue;
      if (reason === undefined) {
        this.waiting.delete(rel);
        continue;
      }
      w.tries++;
      w.dueMs = now + Math.min(MAX_BACKOFF_MS, this.opts.settleMs * 4 ** w.tries);
      this.deps.passedOver(rel, reason);
    }
  }

  private counted(): void {
    const n = this.waiting.size;
    if (n === this.lastCount) return;
    this.lastCount = n;
    this.deps.count(n);
  }
}

function parentOf(relPath: string): string {
  const i = relPath.lastIndexOf('/');
  return i < 0 ? '' : relPath.slice(0, i);
}
