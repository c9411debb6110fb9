import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import parcel from '@parcel/watcher';
import { watch, type FSWatcher } from 'chokidar';
import { clock, type TimerHandle } from '../../clock.js';

/** What the watcher says: look at this file, or list this folder (both relative to input.dir, '/'-separated). */
export interface WatchHints {
  /** Something happened to this name (written, renamed to or from, deleted): the settler stats it. */
  file(relPath: string): void;
  /** This folder changed in ways only a listing tells (a folder moved in, a scan of a polled mount). */
  folder(relDir: string): void;
  /** The watcher cannot go on as asked (the folder was removed, no more watches): the run says so. */
  error(err: Error): void;
}

export interface WatchOptions {
  /** Scan every `pollMs` instead of waiting for the file system's events (network mounts). */
  readonly poll: boolean;
  readonly pollMs: number;
  /** Folders whose files are not the job's (the output folder inside input.dir, hidden ones), by path under input.dir. */
  readonly skipFolder: (relDir: string) => boolean;
  /** Of them, the ones not to watch at all (the output folder inside input.dir: as many files as the inputs). */
  readonly unwatched?: readonly string[];
}

/** A folder watched until `close()`. */
export interface FolderWatch {
  /** Resolves once every folder is watched: what happens after that is seen. */
  readonly ready: Promise<void>;
  close(): Promise<void>;
}

/**
 * input.dir watched: by the file system's events on a local disk (@parcel/watcher), by a
 * scan every `pollMs` on a network mount (chokidar), where another machine's writes send no
 * event. Each names what changed; what a name's event means is the settler's to find out
 * (settle.ts): a file that is there and keeps still is taken, one that is gone is not.
 *
 * Two libraries, each for what it does well (docs/decisions.md): @parcel/watcher's native
 * watch holds the tree in C++ and hands on inotify's events in batches — 1.2 s and 27 MB to
 * watch 100,000 files —, where chokidar stats every file of every folder it watches through
 * promises, 200 MB of passing heap and some 160 MB of memory kept for the same folder; but
 * only chokidar scans a mount where no event comes. Should the native watch be refused (no
 * inotify watches left), the folder is scanned instead, and the run says so.
 */
export function watchFolder(dir: string, opts: WatchOptions, hints: WatchHints): FolderWatch {
  if (opts.poll) return scanned(dir, opts, hints);
  let fallback: FolderWatch | undefined;
  const subscription = parcel
    .subscribe(
      dir,
      (err, events) => {
        if (err) hints.error(err);
        else for (const e of events) onEvent(dir, opts, hints, e);
      },
      { ignore: [...(opts.unwatched ?? [])] },
    )
    .catch((err: unknown) => {
      hints.error(
        new Error(`no file events (${err instanceof Error ? err.message : String(err)}): scanned every ${opts.pollMs / 1000} s instead`),
      );
      fallback = scanned(dir, opts, hints);
      return undefined;
    });
  return {
    ready: subscription.then(() => fallback?.ready),
    close: async () => {
      await (await subscription)?.unsubscribe();
      await fallback?.close();
    },
  };
}

/** One native event: a file's name to look at, or a folder created (moved in, copied in) and every folder in it to list. */
function onEvent(dir: string, opts: WatchOptions, hints: WatchHints, e: parcel.Event): void {
  const rel = relTo(dir, e.path);
  if (rel === '' || rel.startsWith('..') || opts.skipFolder(parentOf(rel))) return;
  if (e.type === 'create' && isFolder(e.path)) {
    // Its files were there before any watch on it: no event names them.
    for (const r of foldersUnder(dir, opts.skipFolder, rel)) hints.folder(r);
    return;
  }
  hints.file(rel);
}

/** chokidar polling folders only: a folder whose stat changed is named, for a listing to say what. */
function scanned(dir: string, opts: WatchOptions, hints: WatchHints): FolderWatch {
  const w: FSWatcher = watch(dir, {
    ignoreInitial: true,
    persistent: true,
    followSymlinks: true,
    usePolling: true,
    interval: opts.pollMs,
    binaryInterval: opts.pollMs,
    // Files are left to their folder's scan; skipped folders are not scanned.
    ignored: (p, stats) => {
      if (stats?.isFile()) return true;
      const r = relTo(dir, p);
      return r !== '' && !r.startsWith('..') && opts.skipFolder(r);
    },
  });
  w.on('raw', (_event, evPath: string, details: unknown) => {
    const watched = (details as { watchedPath?: string } | undefined)?.watchedPath;
    hints.folder(relTo(dir, watched ?? evPath));
  });
  // A folder moved or copied in: its files were there before its scan.
  w.on('addDir', (p: string) => hints.folder(relTo(dir, p)));
  w.on('error', (err: unknown) => hints.error(err instanceof Error ? err : new Error(String(err))));
  // A folder's poll compares each stat with the first one it took, which it takes when it can
  // after 'ready' (libuv's thread pool, late on a busy machine): a file written before that
  // first stat changes nothing it will see. So once an interval has passed, every folder is
  // named once more, for a listing to find what came in that window.
  let again: TimerHandle | undefined;
  const ready = new Promise<void>((resolve) =>
    w.once('ready', () => {
      again = clock.setTimer(() => {
        for (const rel of foldersUnder(dir, opts.skipFolder)) hints.folder(rel);
      }, opts.pollMs);
      resolve();
    }),
  );
  return {
    ready,
    close: () => {
      if (again) clock.clearTimer(again);
      return w.close();
    },
  };
}

/** A path under input.dir, '/'-separated ('' for input.dir itself). */
function relTo(dir: string, p: string): string {
  return path
    .relative(dir, path.isAbsolute(p) ? p : path.join(dir, p))
    .split(path.sep)
    .join('/');
}

function parentOf(relPath: string): string {
  const i = relPath.lastIndexOf('/');
  return i < 0 ? '' : relPath.slice(0, i);
}

function isFolder(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

/**
 * Every folder under `from` (a folder under input.dir; '' for input.dir itself) but the
 * skipped ones, `from` first, by path under input.dir, to a depth of 64 (links to folders
 * are not followed: two links to a folder above them would make the walk endless).
 */
export function foldersUnder(dir: string, skip: (relDir: string) => boolean, from = ''): string[] {
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
      const r = rel === '' ? d.name : `${rel}/${d.name}`;
      if (d.isDirectory() && !skip(r)) walk(r, depth + 1);
    }
  };
  walk(from, 0);
  return out;
}
