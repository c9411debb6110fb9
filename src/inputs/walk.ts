import fs from 'node:fs';
import path from 'node:path';

type ReaddirCallback = (err: NodeJS.ErrnoException | null, entries: fs.Dirent[] | string[]) => void;

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
 */
export function loopSafeFs(): Record<string, unknown> {
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
      if (typeof options === 'function') fs.readdir(dir, done as never);
      else fs.readdir(dir, options as never, done as never);
    },
    readdirSync(dir: string, options?: unknown) {
      if (isLoop(dir)) return [];
      return fs.readdirSync(dir, options as never);
    },
  };
}
