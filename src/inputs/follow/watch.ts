import path from 'node:path';
import { watch, type FSWatcher } from 'chokidar';

/** What the watcher says: look at this file, or list this folder (both relative to input.dir, '/'-separated). */
export interface WatchHints {
  /** Something happened to this name (written, renamed to or from, deleted): the settler stats it. */
  file(relPath: string): void;
  /** This folder changed in ways only a listing tells (a folder moved in, a scan of a polled mount). */
  folder(relDir: string): void;
  /** The watcher cannot go on (the folder was removed, no more watches): the run says so. */
  error(err: Error): void;
}

export interface WatchOptions {
  /** Scan every `pollMs` instead of waiting for the file system's events (network mounts). */
  readonly poll: boolean;
  readonly pollMs: number;
  /** Folders not to watch (the output folder inside input.dir, hidden ones), by path under input.dir. */
  readonly skipFolder: (relDir: string) => boolean;
}

/** A folder watched until `close()`. */
export interface FolderWatch {
  /** Resolves once every folder is watched: what happens after that is seen. */
  readonly ready: Promise<void>;
  close(): Promise<void>;
}

/**
 * input.dir watched through chokidar, folders only. chokidar follows the tree (new folders,
 * removed ones, symbolic links) and, on a local disk, hands on each event of the file
 * system with the name it is about; on a network mount (`poll`) it stats each folder every
 * `pollMs` and says which changed. Files are not chokidar's to watch: it would keep a
 * native watch (inotify) and a record per file — 800 MB and 100,000 of the user's 190,000
 * watches for a folder of 100,000 photos (docs/decisions.md) — while a folder's own watch
 * already tells of every name in it. What a name's event means is the settler's to find
 * out (settle.ts): a file that is there and keeps still is taken; one that is gone is not.
 */
export function watchFolder(dir: string, opts: WatchOptions, hints: WatchHints): FolderWatch {
  const rel = (p: string) => {
    const r = path.relative(dir, path.isAbsolute(p) ? p : path.join(dir, p));
    return r.split(path.sep).join('/');
  };
  const w: FSWatcher = watch(dir, {
    ignoreInitial: true,
    persistent: true,
    followSymlinks: true,
    usePolling: opts.poll,
    interval: opts.pollMs,
    binaryInterval: opts.pollMs,
    // Every file, and every folder skipped, is left to the events of its folder.
    ignored: (p, stats) => {
      if (stats?.isFile()) return true;
      const r = rel(p);
      return r !== '' && !r.startsWith('..') && opts.skipFolder(r);
    },
  });
  w.on('raw', (_event, evPath: string, details: unknown) => {
    const watched = (details as { watchedPath?: string } | undefined)?.watchedPath;
    if (opts.poll || watched === undefined) {
      // A polled folder's stat changed: only a listing says what.
      hints.folder(rel(watched ?? evPath));
      return;
    }
    if (typeof evPath !== 'string' || evPath === '') {
      hints.folder(rel(watched));
      return;
    }
    hints.file(rel(path.join(watched, evPath)));
  });
  // A folder moved or copied in: its files were there before its watch, so no event names them.
  w.on('addDir', (p: string) => hints.folder(rel(p)));
  w.on('error', (err: unknown) => hints.error(err instanceof Error ? err : new Error(String(err))));
  const ready = new Promise<void>((resolve) => w.once('ready', () => resolve()));
  return { ready, close: () => w.close() };
}
