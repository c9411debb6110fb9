import { readdirSync, readlinkSync, statSync, closeSync, existsSync, openSync, unlinkSync } from 'node:fs';
import { LedgerMovedError, type LedgerChange } from '../errors.js';
import path from 'node:path';
import type Database from 'better-sqlite3';
import { makeDirs } from '../fsdirs.js';

/**
 * The ledger's file as it was opened (device and inode), so that a ledger moved, replaced
 * or deleted under a running `darkroom run` is noticed before the next call rather than
 * after the night: the run's writes would go on into a file nobody will open again, and the
 * next run, finding no ledger (or another one) at the path, would create every photo again.
 *
 * One stat of the path per check (a few microseconds against a call's 100+ ms); the
 * search for where the file went runs only once something changed.
 */
export class LedgerFile {
  private constructor(
    readonly path: string,
    private readonly dev: bigint,
    private readonly ino: bigint,
  ) {}

  /** Remember the file at `path` now; null for ':memory:', which has no path to lose. */
  static at(path: string): LedgerFile | null {
    if (path === ':memory:') return null;
    const st = statSync(path, { bigint: true });
    return new LedgerFile(path, st.dev, st.ino);
  }

  /** The change, or null while the path still names the file opened. */
  change(): LedgerChange | null {
    let st;
    try {
      st = statSync(this.path, { bigint: true });
    } catch {
      return this.whereOpenFileIs();
    }
    if (st.dev === this.dev && st.ino === this.ino) return null;
    return { kind: 'replaced', original: this.whereOpenFileIs() };
  }

  /** Throws LedgerMovedError when the path no longer names the file opened. */
  check(): void {
    const change = this.change();
    if (change) throw new LedgerMovedError(this.path, change, describeChange(this.path, change));
  }

  /**
   * The process holds the file open (SQLite keeps its descriptor): /proc/self/fd names it
   * by its current path, or marks it deleted when no name is left.
   */
  private whereOpenFileIs(): { kind: 'moved'; to: string } | { kind: 'deleted' } | { kind: 'gone' } {
    let fds: string[];
    try {
      fds = readdirSync('/proc/self/fd');
    } catch {
      return { kind: 'gone' };
    }
    for (const fd of fds) {
      const link = `/proc/self/fd/${fd}`;
      try {
        const st = statSync(link, { bigint: true });
        if (st.dev !== this.dev || st.ino !== this.ino) continue;
        if (st.nlink === 0n) return { kind: 'deleted' };
        const to = readlinkSync(link);
        // The name it was opened by is gone but another (hard) link keeps it: where, the
        // kernel does not say.
        if (to.endsWith(' (deleted)')) return { kind: 'gone' };
        if (to !== this.path) return { kind: 'moved', to };
      } catch {
        // closed meanwhile, or not ours to read: look at the next one
      }
    }
    return { kind: 'gone' };
  }
}

function describeChange(file: string, c: LedgerChange): string {
  const stop = 'nothing more was sent';
  switch (c.kind) {
    case 'moved':
      return `the ledger ${file} was moved to ${c.to} during the run; ${stop}. Move it back, or run again with --ledger ${c.to}`;
    case 'deleted':
      return `the ledger ${file} was deleted during the run; ${stop}`;
    case 'gone':
      return `the ledger ${file} was moved or deleted during the run; ${stop}. Put it back (or point --ledger at its new place) and run again`;
    case 'replaced': {
      const o = c.original;
      const where =
        o.kind === 'moved'
          ? `; the one this run used is now ${o.to}: move it back, or run again with --ledger ${o.to}`
          : o.kind === 'deleted'
            ? '; the one this run used was deleted'
            : '. Put the one this run used back (or point --ledger at it) and run again';
      return `the ledger ${file} was replaced by another file during the run; ${stop}${where}`;
    }
  }
}

/**
 * Whether this process has the file at `path` open (its inode among /proc/self/fd); false
 * where that cannot be told.
 */
function openHere(path: string): boolean {
  let target;
  let fds: string[];
  try {
    target = statSync(path, { bigint: true });
    fds = readdirSync('/proc/self/fd');
  } catch {
    return false;
  }
  return fds.some((fd) => {
    try {
      const st = statSync(`/proc/self/fd/${fd}`, { bigint: true });
      return st.dev === target.dev && st.ino === target.ino;
    } catch {
      return false;
    }
  });
}

/** Where a lost ledger was saved (and whether its path is free to put it back), or why it could not be. */
export type Rescue = { readonly savedTo: string; readonly pathFree: boolean } | { readonly error: string };

/**
 * A ledger deleted during a run (or deleted as another file took its name) lives on only
 * in this process's open file: when the process ends, it is gone, and with it the record of
 * every task paid for and every create whose outcome is unknown; the next run would create
 * those photos again. So, once the run has stopped and the calls in flight are recorded,
 * a consistent copy is written beside the path (VACUUM INTO reads through this connection,
 * journal included) under a name of its own, `<ledger>.rescued`.
 *
 * The deleted file's journal (`<ledger>-wal`, `-shm`) stays at the path: SQLite does not
 * remove the journal of a database file that was unlinked under it, and a journal found
 * beside a database is replayed into it: put back at the path, the copy would be
 * overwritten with the deleted file's pages. Those names are removed here, but only while
 * they are the files this process has open (the journal of the deleted ledger, not that
 * of another ledger since made at the path).
 */
export function rescueDeleted(db: Database.Database, file: string, change: LedgerChange | null): Rescue | null {
  const deleted = change?.kind === 'deleted' || (change?.kind === 'replaced' && change.original.kind === 'deleted');
  if (!deleted) return null;
  let to = `${file}.rescued`;
  for (let n = 2; existsSync(to); n++) to = `${file}.rescued-${n}`;
  try {
    makeDirs(path.dirname(to));
    // Readable by its owner only, like the ledger; VACUUM INTO fills an empty file.
    closeSync(openSync(to, 'wx', 0o600));
    db.prepare('VACUUM INTO ?').run(to);
  } catch (err) {
    const e = err as { code?: string; message?: string };
    return { error: `${e.message ?? String(err)}${e.code && !e.message?.includes(e.code) ? ` (${e.code})` : ''}` };
  }
  for (const side of [`${file}-wal`, `${file}-shm`]) {
    try {
      if (openHere(side)) unlinkSync(side);
    } catch {
      // gone meanwhile
    }
  }
  return { savedTo: to, pathFree: change.kind === 'deleted' && !existsSync(file) };
}
