import fs from 'node:fs';
import path from 'node:path';

type ReaddirCallback = (err: NodeJS.ErrnoException | null, entries: fs.Dirent[] | string[]) => void;

/** A folder's entries by name, so the walk's order is the same on every run and every file system. */
function byName<T extends fs.Dirent | string>(entries: T[]): T[] {
  const name = (e: T) => (typeof e === 'string' ? e : e.name);
  return entries.sort((a, b) => (name(a) < name(b) ? -1 : name(a) > name(b) ? 1 : 0));
}

/**
 * Backpressure for a walk read as a stream: fast-glob pushes every entry it finds whether or
 * not anyone reads them, so a walk of a million files, read faster than the files are looked
 * at, would hold them all. The walk reads its next folder only while the reader keeps up:
 * fewer than `high` entries listed and not yet read, or the reader waiting for the next one
 * (then nothing is held back, whatever the folders held that the patterns left out).
 */
export class WalkGate {
  #listed = 0;
  #read = 0;
  #waiting = false;
  #open: (() => void)[] = [];

  constructor(private readonly high: number) {}

  /** Resolves when the walk may read its next folder. */
  whenOpen(): Promise<void> {
    if (this.isOpen()) return Promise.resolve();
    return new Promise((resolve) => this.#open.push(resolve));
  }

  /** A folder read: its entries listed. */
  listed(n: number): void {
    this.#listed += n;
  }

  /** The reader took an entry (`waiting` false), or waits for the next (true). */
  reading(waiting: boolean): void {
    this.#waiting = waiting;
    if (!waiting) this.#read++;
    if (this.#open.length > 0 && this.isOpen()) for (const f of this.#open.splice(0)) f();
  }

  private isOpen(): boolean {
    return this.#waiting || this.#listed - this.#read < this.high;
  }
}

/**
 * A file-system adapter for fast-glob (its `fs` option) under which symlink loops end.
 *
 * fast-glob follows symbolic links to folders but does not notice a cycle: a link back to
 * a parent (`photos/again -> ..`) is walked again and again until the path length limit,
 * and two such links make the walk exponential — a run that never starts. Here a folder
 * whose real path is the real path of one of its own ancestors is read as empty, which
 * ends every cycle after one turn. The decision depends only on the path itself, never on
 * the order of the walk, so the photos found (and their names in the ledger) are the same
 * on every run. Two links to the same folder that are not a cycle are both walked; the
 * runner keeps the first name of each real file.
 *
 * Each folder's entries come sorted by name, and with a `gate` each folder is read only once
 * the reader has kept up (WalkGate).
 */
export function loopSafeFs(gate?: WalkGate): Record<string, unknown> {
  const real = new Map<string, string | null>();
  const realOf = (p: string): string | null => {
    let r = real.get(p);
    if (r === undefined) {
      try {
        r = fs.realpathSync(p);
      } catch {
        r = null;
      }
      real.set(p, r);
    }
    return r;
  };
  const isLoop = (dir: string): boolean => {
    const abs = path.resolve(dir);
    const mine = realOf(abs);
    if (mine === null) return false;
    for (let up = path.dirname(abs); up !== path.dirname(up); up = path.dirname(up)) {
      if (realOf(up) === mine) return true;
    }
    return false;
  };
  return {
    readdir(dir: string, options: unknown, cb?: ReaddirCallback) {
      const done = (typeof options === 'function' ? options : cb) as ReaddirCallback;
      if (isLoop(dir)) {
        process.nextTick(() => done(null, []));
        return;
      }
      const sorted: ReaddirCallback = (err, entries) => {
        if (err === null) gate?.listed(entries.length);
        done(err, err === null ? byName(entries as fs.Dirent[]) : entries);
      };
      const read = () => {
        if (typeof options === 'function') fs.readdir(dir, sorted as never);
        else fs.readdir(dir, options as never, sorted as never);
      };
      if (gate) void gate.whenOpen().then(read);
      else read();
    },
    readdirSync(dir: string, options?: unknown) {
      if (isLoop(dir)) return [];
      return byName(fs.readdirSync(dir, options as never) as unknown as fs.Dirent[]);
    },
  };
}
