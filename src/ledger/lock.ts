import { randomUUID } from 'node:crypto';
import type Database from 'better-sqlite3';
import { clock } from '../clock.js';
import { stmt } from './statements.js';
import { LedgerBusyError, type HolderVerdict, type LockHolder, type ProcessIdentity } from '../errors.js';
import { readFileSync, readlinkSync } from 'node:fs';
import { hostname } from 'node:os';

/** How long a contender waits out a dying holder or an instant SQLITE_BUSY (the busy timeout's), and how often it looks again. */
const LOCK_WAIT_MS = 5000;
const LOCK_RETRY_MS = 20;
const LOCK_ATTEMPTS = LOCK_WAIT_MS / LOCK_RETRY_MS;
const PAUSE = new Int32Array(new SharedArrayBuffer(4));

export interface LockRequest {
  /** What takes the lock, as the holder's line will name it: 'run', 'retry --held'. */
  readonly command: string;
  /**
   * `--break-lock HOST:PID`: take over a lock whose holder cannot be checked from here
   * (another host or container) and that the operator knows is gone. It must name the
   * holder found, so that it never breaks a lock taken since by another run.
   */
  readonly breakLock?: string | undefined;
}

export interface HeldLock {
  readonly token: string;
  /** The holder taken over (its process gone, or broken with --break-lock), if any. */
  readonly replaced: LockHolder | undefined;
  /** Delete the row if it is still ours; safe to call more than once, and after close. */
  release(): void;
}

/** The lock's row as SQLite gives it. */
export interface LockRow {
  token: string;
  command: string;
  pid: number;
  host: string;
  boot_id: string | null;
  pid_ns: string | null;
  proc_start: string | null;
  started_ms: number;
}

/**
 * L6, one writer per ledger: the lock is a row inside the ledger (see migrations/007_run_lock.sql), so
 * every path that reaches the database reaches the same lock — a symbolic link (SQLite
 * resolves it, journal included), `a/../b` (resolved as the kernel does, see
 * config/ledgerPath.ts); a lock file beside the path was passed by any of them. A hard link
 * is the one name SQLite cannot follow to the journal: it is refused before anything is
 * opened under it (open.ts, refuseSecondName).
 *
 * Taking it and taking it over happen in one BEGIN IMMEDIATE transaction: SQLite admits one
 * writer at a time (a second waits, busy_timeout 5 s), so of two runs that find the same
 * stale row exactly one replaces it; the other then reads the winner's row and its holder
 * is alive. A writer takes the lock before anything it writes; `recover()` in particular,
 * which marks every `sending` create ambiguous, must never run beside a live holder.
 */
export class RunLock {
  private ours: string | undefined;

  constructor(
    private readonly db: Database.Database,
    private readonly file: string,
    private readonly probe: ProcessProbe = systemProbe,
  ) {}

  holder(): LockHolder | undefined {
    const row = stmt<[], LockRow>(this.db, SELECT_HOLDER).get();
    return row ? holderFromRow(row) : undefined;
  }

  /**
   * Take the lock, or throw LedgerBusyError naming the holder and what to do.
   *
   * Two things a contender might take for a reason to stop are waited out instead, within
   * the busy timeout (5 s), so that of contenders for a stale lock one always goes on: a
   * holder that was sent SIGKILL and has not died yet (`kill -9` and two runs started at
   * once; a process killed in an fsync dies when it returns), and an SQLITE_BUSY that
   * SQLite gives at once rather than after its busy handler (BUSY_SNAPSHOT, BUSY_RECOVERY
   * while another opener recovers the WAL a killed run left): the holder is read and judged
   * again each time.
   */
  acquire(req: LockRequest): HeldLock {
    const me = this.probe.self();
    const token = randomUUID();
    const deadline = clock.now() + LOCK_WAIT_MS;
    /** The holder to replace (undefined: none), or LedgerBusyError when it may not be. */
    const mayReplace = (h: LockHolder | undefined): LockHolder | undefined => {
      if (!h) return undefined;
      const verdict = judgeHolder(h, me, this.probe);
      if (verdict === 'live') throw ledgerBusy(this.file, h, 'live');
      if (verdict !== 'gone' && req.breakLock !== holderId(h)) throw ledgerBusy(this.file, h, verdict);
      return h;
    };
    let replaced: LockHolder | undefined;
    const take = this.db.transaction(() => {
      // Again inside the transaction: another process may have taken it since the read.
      replaced = mayReplace(this.holder());
      stmt(
        this.db,
        `INSERT INTO run_lock (id, token, command, pid, host, boot_id, pid_ns, proc_start, started_ms)
         VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (id) DO UPDATE SET token = excluded.token, command = excluded.command, pid = excluded.pid,
           host = excluded.host, boot_id = excluded.boot_id, pid_ns = excluded.pid_ns,
           proc_start = excluded.proc_start, started_ms = excluded.started_ms`,
      ).run(token, req.command, me.pid, me.host, me.bootId, me.pidNs, me.procStart, clock.now());
    });
    for (let attempt = 1; ; attempt++) {
      try {
        // A plain read first: refused, a process never takes the write lock, even for a
        // moment, from under the run that holds the ledger.
        mayReplace(this.holder());
        take.immediate();
        break;
      } catch (err) {
        const dying =
          err instanceof LedgerBusyError &&
          err.holder !== undefined &&
          err.verdict === 'live' &&
          (this.probe.dying?.(err.holder.pid) ?? false);
        const busy = (err as { code?: string }).code?.startsWith('SQLITE_BUSY') ?? false;
        // (Attempts bound it too: a virtual clock does not move in this loop.)
        if ((!dying && !busy) || attempt >= LOCK_ATTEMPTS || clock.now() >= deadline) {
          if (busy) throw ledgerBusy(this.file, undefined);
          throw err;
        }
        Atomics.wait(PAUSE, 0, 0, LOCK_RETRY_MS);
      }
    }
    this.ours = token;
    // Into the main file at once: a process that meets the ledger under another name (a
    // hard link, which SQLite cannot follow to this journal) reads the holder from there
    // (open.ts, refuseSecondName). FULL waits (busy_timeout) for readers on older snapshots; a checkpoint
    // that still cannot finish costs only that the other process says less.
    try {
      this.db.pragma('wal_checkpoint(FULL)');
    } catch {
      // busy: see above
    }
    return { token, replaced, release: () => this.releaseToken(token) };
  }

  /** Delete the row if `token` still holds it. */
  releaseToken(token: string): void {
    if (this.ours === token) this.ours = undefined;
    if (!this.db.open) return;
    try {
      stmt(this.db, 'DELETE FROM run_lock WHERE id = 1 AND token = ?').run(token);
    } catch {
      // Left behind (a full disk, a ledger gone read-only): the next run finds this
      // process gone and takes the row over.
    }
  }

  /** The token of the lock this connection holds, if any. */
  get held(): string | undefined {
    return this.ours;
  }

  /** Whether no process holds the lock, or its holder is gone (judged from here). */
  holderGone(): boolean {
    const h = this.holder();
    return !h || h.token === this.ours || judgeHolder(h, this.probe.self(), this.probe) === 'gone';
  }

  /**
   * Refuse (LedgerBusyError) when another process holds the lock and is, or may be, alive:
   * for sweeps such as recover() that must never run beside a live writer, whatever
   * command calls them.
   */
  assertNoOtherHolder(): void {
    const h = this.holder();
    if (!h || h.token === this.ours) return;
    const verdict = judgeHolder(h, this.probe.self(), this.probe);
    if (verdict !== 'gone') throw ledgerBusy(this.file, h, verdict);
  }
}

/** Whether `h` is a process that runs now, from the point of view of `me`. */
export function judgeHolder(h: LockHolder, me: ProcessIdentity, probe: ProcessProbe): HolderVerdict {
  const known = (a: string | null, b: string | null) => a !== null && b !== null;
  // The same boot id is the same running kernel: this machine, whatever its name is now
  // (renamed since), or a container on it, told apart by the pid namespace.
  const sameKernel = known(h.bootId, me.bootId) && h.bootId === me.bootId;
  if (!sameKernel) {
    // Hostnames are taken to name machines; a ledger is not shared by two machines while
    // in use anyway (SQLite's WAL needs every connection on one host).
    if (h.host !== me.host) return 'another-host';
    // This host, booted since the holder took the lock: every process of then is gone.
    if (known(h.bootId, me.bootId)) return 'gone';
  }
  if (known(h.pidNs, me.pidNs) && h.pidNs !== me.pidNs) return 'another-container';
  if (!probe.alive(h.pid)) return 'gone';
  if (h.procStart !== null) {
    const now = probe.startOf(h.pid);
    if (now !== null && now !== h.procStart) return 'gone';
  }
  return 'live';
}

/** What `--break-lock` must name: HOST:PID of the holder. */
export function holderId(h: Pick<LockHolder, 'host' | 'pid'>): string {
  return `${h.host}:${h.pid}`;
}

export const SELECT_HOLDER = 'SELECT token, command, pid, host, boot_id, pid_ns, proc_start, started_ms FROM run_lock WHERE id = 1';

export function holderFromRow(r: LockRow): LockHolder {
  return {
    token: r.token,
    command: r.command,
    pid: r.pid,
    host: r.host,
    bootId: r.boot_id,
    pidNs: r.pid_ns,
    procStart: r.proc_start,
    startedMs: r.started_ms,
  };
}

function since(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** The ledger is in use: LedgerBusyError with the line that names who holds it and what to do. */
export function ledgerBusy(file: string, holder: LockHolder | undefined, verdict: HolderVerdict = 'live'): LedgerBusyError {
  return new LedgerBusyError(file, holder, verdict, busyMessage(file, holder, verdict));
}

function busyMessage(file: string, h: LockHolder | undefined, verdict: HolderVerdict): string {
  if (!h) return `the ledger ${file} stayed busy for 5 s (another process is writing it); try again in a moment`;
  if (verdict === 'live') {
    return `another darkroom ${h.command} (pid ${h.pid}) is using the ledger ${file}; wait for it to end or stop it (it runs on ${h.host} since ${since(h.startedMs)}; darkroom status works alongside)`;
  }
  const where = verdict === 'another-container' ? `on ${h.host} in another container (pid namespace)` : `on ${h.host}`;
  return (
    `the ledger ${file} is locked by darkroom ${h.command} ${where} (pid ${h.pid}, since ${since(h.startedMs)}), which cannot be checked from here; ` +
    `if that run is known to be gone, run again with --break-lock ${holderId(h)}`
  );
}

/** What a lock needs to know about this machine's processes; tests give their own. */
export interface ProcessProbe {
  /** This process. */
  self(): ProcessIdentity;
  /** Whether `pid` names a running process (a zombie is not running). */
  alive(pid: number): boolean;
  /** The start time of `pid` as `procStart` records it; null when unknown. */
  startOf(pid: number): string | null;
  /**
   * Whether `pid` was sent SIGKILL and has not died yet: it cannot survive it, but a process
   * in the middle of an fsync (state D) goes only once that returns. Optional: absent, no.
   */
  dying?(pid: number): boolean;
}

export const systemProbe: ProcessProbe = {
  self: () => ({
    pid: process.pid,
    host: hostname(),
    bootId: readOrNull(() => readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim()),
    pidNs: readOrNull(() => readlinkSync('/proc/self/ns/pid')),
    procStart: procStat(process.pid)?.start ?? null,
  }),
  alive(pid) {
    if (!Number.isInteger(pid) || pid <= 0) return false;
    try {
      process.kill(pid, 0);
    } catch (err) {
      // EPERM: it exists, under another user.
      if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
    }
    // kill(0) succeeds on a zombie (killed, not yet reaped by its parent): it runs no more.
    const state = procStat(pid)?.state;
    return state !== 'Z' && state !== 'X';
  },
  startOf: (pid) => procStat(pid)?.start ?? null,
  dying(pid) {
    const text = readOrNull(() => readFileSync(`/proc/${pid}/status`, 'utf8'));
    if (text === null) return false;
    // SigPnd (the thread's) and ShdPnd (the process's) pending masks; SIGKILL (9) is bit 8.
    for (const m of text.matchAll(/^(?:SigPnd|ShdPnd):\s*([0-9a-f]+)$/gim)) if ((BigInt(`0x${m[1]}`) & 0x100n) !== 0n) return true;
    return false;
  },
};

/**
 * Fields of /proc/<pid>/stat. The second field is the command name in parentheses and may
 * itself hold spaces and parentheses, so the fields are counted from the last `)`: the
 * state is field 3, the start time field 22.
 */
function procStat(pid: number): { state: string; start: string } | undefined {
  const text = readOrNull(() => readFileSync(`/proc/${pid}/stat`, 'utf8'));
  if (text === null) return undefined;
  const rest = text
    .slice(text.lastIndexOf(')') + 1)
    .trim()
    .split(/\s+/);
  const state = rest[0];
  const start = rest[19];
  return state !== undefined && start !== undefined ? { state, start } : undefined;
}

function readOrNull(read: () => string): string | null {
  try {
    return read();
  } catch {
    return null;
  }
}
