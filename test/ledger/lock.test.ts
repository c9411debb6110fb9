import { linkSync, mkdirSync, rmSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { Ledger } from '../../src/ledger/index.js';
import { judgeHolder, RunLock, systemProbe, type ProcessProbe } from '../../src/ledger/lock.js';
import { type LockHolder, type ProcessIdentity, LedgerBusyError, LedgerLinkedError } from '../../src/errors.js';
import { openDatabase } from '../../src/ledger/open.js';
import { makeTempDir } from '../helpers/job.js';

/**
 * The run lock (issue 12, point 5): a row inside the ledger, taken in one IMMEDIATE
 * transaction, its holder judged by pid, start time, boot id, pid namespace and host.
 * Processes are played by probes: `self` is who takes the lock, `alive`/`startOf` what
 * /proc would say about another pid.
 */

const dirs: string[] = [];
const dbs: Database.Database[] = [];
afterEach(() => {
  while (dbs.length) dbs.pop()!.close();
  while (dirs.length) rmSync(dirs.pop()!, { recursive: true, force: true });
});

function ledgerFile(): string {
  const d = makeTempDir('darkroom-lock-');
  dirs.push(d);
  return path.join(d, 'darkroom.db');
}

/** A connection of its own to `file` (as another process would have), migrated. */
function connect(file: string): Database.Database {
  const db = openDatabase(file);
  dbs.push(db);
  return db;
}

const HOST_A: ProcessIdentity = { pid: 4100, host: 'scanner', bootId: 'boot-1', pidNs: 'pid:[1]', procStart: '5000' };

/**
 * A machine where the processes in `running` run, each with its start time; `self` is the
 * process that asks.
 */
function machine(self: ProcessIdentity, running: Record<number, string> = {}): ProcessProbe {
  return {
    self: () => self,
    alive: (pid) => pid in running,
    startOf: (pid) => running[pid] ?? null,
  };
}

describe('RunLock.acquire', () => {
  it('takes a free lock, recording pid, host, boot id, pid namespace, start time and when', () => {
    const file = ledgerFile();
    const lock = new RunLock(connect(file), file, machine(HOST_A));
    const held = lock.acquire({ command: 'run' });
    expect(held.replaced).toBeUndefined();
    expect(lock.holder()).toMatchObject({ ...HOST_A, command: 'run', token: held.token });
    expect(lock.holder()!.startedMs).toBeGreaterThan(0);
  });

  it('refuses while the holder runs: LedgerBusyError naming its pid, host and since when; the row is left as it was', () => {
    const file = ledgerFile();
    const a = new RunLock(connect(file), file, machine(HOST_A, { 4100: '5000' }));
    const held = a.acquire({ command: 'run' });
    const b = new RunLock(connect(file), file, machine({ ...HOST_A, pid: 4200, procStart: '6000' }, { 4100: '5000', 4200: '6000' }));
    let err: unknown;
    try {
      b.acquire({ command: 'run' });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(LedgerBusyError);
    expect((err as LedgerBusyError).code).toBe('LOCKED');
    expect((err as Error).message).toMatch(
      new RegExp(
        `^another darkroom run \\(pid 4100\\) is using the ledger ${file}; wait for it to end or stop it \\(it runs on scanner since \\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ; darkroom status works alongside\\)$`,
      ),
    );
    expect(a.holder()!.token).toBe(held.token);
  });

  it('takes over the lock of a process that has ended (kill -9): one transaction, the old holder reported', () => {
    const file = ledgerFile();
    new RunLock(connect(file), file, machine(HOST_A)).acquire({ command: 'run' });
    const next = new RunLock(connect(file), file, machine({ ...HOST_A, pid: 4200, procStart: '6000' }, { 4200: '6000' }));
    const held = next.acquire({ command: 'retry --held' });
    expect(held.replaced).toMatchObject({ pid: 4100, host: 'scanner', command: 'run' });
    expect(next.holder()).toMatchObject({ pid: 4200, command: 'retry --held', token: held.token });
  });

  it('a holder sent SIGKILL and not dead yet (in an fsync, say) is waited for, then taken over: the contender does not stop', () => {
    const file = ledgerFile();
    new RunLock(connect(file), file, machine(HOST_A)).acquire({ command: 'run' });
    // Pid 4100 still runs for its next 5 looks, SIGKILL pending all along.
    let looks = 0;
    const probe: ProcessProbe = {
      self: () => ({ ...HOST_A, pid: 4200, procStart: '6000' }),
      alive: (pid) => pid === 4200 || (pid === 4100 && ++looks <= 5),
      startOf: (pid) => (pid === 4100 ? '5000' : pid === 4200 ? '6000' : null),
      dying: (pid) => pid === 4100,
    };
    const held = new RunLock(connect(file), file, probe).acquire({ command: 'run' });
    expect(held.replaced).toMatchObject({ pid: 4100 });
    expect(looks).toBeGreaterThan(5);
  });

  it('pid reuse: the same pid running with another start time is another process, and its lock is taken over', () => {
    const file = ledgerFile();
    new RunLock(connect(file), file, machine(HOST_A)).acquire({ command: 'run' });
    // Pid 4100 runs again, but started at 9999: a shell that got the dead run's pid.
    const next = new RunLock(connect(file), file, machine({ ...HOST_A, pid: 4200, procStart: '6000' }, { 4100: '9999', 4200: '6000' }));
    expect(next.acquire({ command: 'run' }).replaced).toMatchObject({ pid: 4100, procStart: '5000' });
  });

  it('the same pid with the same start time is the holder itself, alive: refused', () => {
    const file = ledgerFile();
    new RunLock(connect(file), file, machine(HOST_A)).acquire({ command: 'run' });
    const next = new RunLock(connect(file), file, machine({ ...HOST_A, pid: 4200 }, { 4100: '5000' }));
    expect(() => next.acquire({ command: 'run' })).toThrow(LedgerBusyError);
  });

  it('a holder from before a reboot (another boot id on this host) is gone, whatever runs under its pid now', () => {
    const file = ledgerFile();
    new RunLock(connect(file), file, machine(HOST_A)).acquire({ command: 'run' });
    const next = new RunLock(connect(file), file, machine({ ...HOST_A, pid: 4200, bootId: 'boot-2' }, { 4100: '5000' }));
    expect(next.acquire({ command: 'run' }).replaced).toMatchObject({ pid: 4100, bootId: 'boot-1' });
  });

  it('the same boot id is this machine even under another hostname (renamed since): its holder is checked, not refused as remote', () => {
    const file = ledgerFile();
    new RunLock(connect(file), file, machine({ ...HOST_A, host: 'old-name' })).acquire({ command: 'run' });
    const gone = new RunLock(connect(file), file, machine({ ...HOST_A, pid: 4200 }));
    expect(gone.acquire({ command: 'run' }).replaced).toMatchObject({ host: 'old-name' });
    const file2 = ledgerFile();
    new RunLock(connect(file2), file2, machine({ ...HOST_A, host: 'old-name' })).acquire({ command: 'run' });
    const alive = new RunLock(connect(file2), file2, machine({ ...HOST_A, pid: 4200 }, { 4100: '5000' }));
    expect(() => alive.acquire({ command: 'run' })).toThrow(/^another darkroom run \(pid 4100\)/);
  });

  it('a container on this kernel under another hostname (same boot id, another pid namespace) cannot be checked', () => {
    const file = ledgerFile();
    new RunLock(connect(file), file, machine({ ...HOST_A, host: 'c0ffee', pidNs: 'pid:[7]' })).acquire({ command: 'run' });
    const here = new RunLock(connect(file), file, machine({ ...HOST_A, pid: 4200 }));
    expect(() => here.acquire({ command: 'run' })).toThrow(/on c0ffee in another container \(pid namespace\).*--break-lock c0ffee:4100$/);
  });

  it('a holder on another host cannot be checked: refused with how to proceed; --break-lock must name it', () => {
    const file = ledgerFile();
    new RunLock(connect(file), file, machine({ ...HOST_A, host: 'nas', bootId: 'nas-boot' })).acquire({ command: 'run' });
    const here = new RunLock(connect(file), file, machine({ ...HOST_A, pid: 4200 }));
    let err: unknown;
    try {
      here.acquire({ command: 'run' });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(LedgerBusyError);
    expect((err as LedgerBusyError).verdict).toBe('another-host');
    expect((err as Error).message).toMatch(
      new RegExp(
        `^the ledger ${file} is locked by darkroom run on nas \\(pid 4100, since \\S+Z\\), which cannot be checked from here; if that run is known to be gone, run again with --break-lock nas:4100$`,
      ),
    );
    // A --break-lock naming another holder (one taken over since, say) breaks nothing.
    expect(() => here.acquire({ command: 'run', breakLock: 'nas:4101' })).toThrow(LedgerBusyError);
    expect(here.acquire({ command: 'run', breakLock: 'nas:4100' }).replaced).toMatchObject({ host: 'nas', pid: 4100 });
  });

  it('a holder in another container on this host (another pid namespace) cannot be checked either', () => {
    const file = ledgerFile();
    new RunLock(connect(file), file, machine({ ...HOST_A, pidNs: 'pid:[2]' })).acquire({ command: 'run' });
    const here = new RunLock(connect(file), file, machine({ ...HOST_A, pid: 4200 }, { 4100: '5000' }));
    expect(() => here.acquire({ command: 'run' })).toThrow(/on scanner in another container \(pid namespace\).*--break-lock scanner:4100/);
    expect(here.acquire({ command: 'run', breakLock: 'scanner:4100' }).replaced).toMatchObject({ pidNs: 'pid:[2]' });
  });

  it('--break-lock never breaks the lock of a holder that is alive here', () => {
    const file = ledgerFile();
    new RunLock(connect(file), file, machine(HOST_A)).acquire({ command: 'run' });
    const here = new RunLock(connect(file), file, machine({ ...HOST_A, pid: 4200 }, { 4100: '5000' }));
    expect(() => here.acquire({ command: 'run', breakLock: 'scanner:4100' })).toThrow(LedgerBusyError);
  });

  it('waits for a writer (busy_timeout), then says so in one line if the ledger stays busy', () => {
    const file = ledgerFile();
    const writer = connect(file);
    const waiting = connect(file);
    waiting.pragma('busy_timeout = 50');
    writer.exec('BEGIN IMMEDIATE');
    try {
      expect(() => new RunLock(waiting, file, machine(HOST_A)).acquire({ command: 'run' })).toThrow(
        /stayed busy for 5 s \(another process is writing it\); try again/,
      );
    } finally {
      writer.exec('ROLLBACK');
    }
  });
});

describe('RunLock release', () => {
  it('deletes the row only while it is ours: a run whose lock was taken over does not free its successor', () => {
    const file = ledgerFile();
    const old = new RunLock(connect(file), file, machine(HOST_A));
    const stale = old.acquire({ command: 'run' });
    const next = new RunLock(connect(file), file, machine({ ...HOST_A, pid: 4200 }, { 4200: '5000' }));
    const held = next.acquire({ command: 'run' });
    stale.release();
    expect(next.holder()?.token).toBe(held.token);
    held.release();
    expect(next.holder()).toBeUndefined();
    held.release(); // twice: nothing to do
  });

  it('Ledger.close releases the lock it holds; release after close is harmless', () => {
    const file = ledgerFile();
    const ledger = Ledger.open(file);
    const held = ledger.acquireRunLock({ command: 'run' });
    expect(ledger.lockHolder()?.pid).toBe(process.pid);
    ledger.close();
    held.release();
    const again = Ledger.open(file);
    expect(again.lockHolder()).toBeUndefined();
    again.close();
  });
});

describe('Ledger.recover beside a lock it does not hold', () => {
  it("refuses while a live process holds the lock (it would mark that run's creates ambiguous), and runs once it is gone", () => {
    const file = ledgerFile();
    const holderDb = connect(file);
    new RunLock(holderDb, file).acquire({ command: 'run' }); // this very process: alive
    const ledger = Ledger.open(file);
    try {
      expect(() => ledger.recover()).toThrow(LedgerBusyError);
      holderDb.prepare('UPDATE run_lock SET pid = 999999999').run(); // no such process
      expect(ledger.recover()).toEqual({ ambiguous: 0, uploadsRestarted: 0, downloadsRestarted: 0 });
    } finally {
      ledger.close();
    }
  });
});

describe('every path to the ledger reaches the one lock', () => {
  it('a symbolic link and a `..` path meet the lock taken through the real path', () => {
    const file = ledgerFile();
    const dir = path.dirname(file);
    const holder = Ledger.open(file);
    holder.acquireRunLock({ command: 'run' });
    try {
      symlinkSync(file, path.join(dir, 'link.db'));
      mkdirSync(path.join(dir, 'sub'));
      for (const p of [path.join(dir, 'link.db'), `${dir}/sub/../darkroom.db`]) {
        const other = Ledger.open(p);
        try {
          expect(() => other.acquireRunLock({ command: 'run' })).toThrow(LedgerBusyError);
        } finally {
          other.close();
        }
      }
    } finally {
      holder.close();
    }
  });

  it('a hard link is refused before anything is written under it: the busy line while a run holds it, else what links do', () => {
    const file = ledgerFile();
    const hard = path.join(path.dirname(file), 'hard.db');
    const holder = Ledger.open(file);
    holder.acquireRunLock({ command: 'run' });
    linkSync(file, hard);
    expect(() => Ledger.open(hard)).toThrow(LedgerBusyError);
    expect(() => Ledger.open(file)).toThrow(LedgerBusyError); // either name: the file has two
    holder.close();
    expect(() => Ledger.open(hard)).toThrow(LedgerLinkedError);
    expect(() => Ledger.open(hard)).toThrow(/has 2 names \(hard links\).*find \/ -xdev -samefile/);
    rmSync(hard);
    Ledger.open(file).close();
  });
});

describe('judgeHolder on this machine', () => {
  it('a running process is not dying (no SIGKILL pending), nor this one', () => {
    expect(systemProbe.dying!(process.pid)).toBe(false);
    expect(systemProbe.dying!(process.ppid)).toBe(false);
    expect(systemProbe.dying!(2 ** 22 + 1)).toBe(false);
  });

  it('this process is live; a pid that does not exist is gone', () => {
    const me = systemProbe.self();
    const holder: LockHolder = { ...me, token: 't', command: 'run', startedMs: 0 };
    expect(judgeHolder(holder, me, systemProbe)).toBe('live');
    expect(judgeHolder({ ...holder, pid: 999_999_999 }, me, systemProbe)).toBe('gone');
    if (me.procStart !== null) expect(judgeHolder({ ...holder, procStart: '1' }, me, systemProbe)).toBe('gone');
  });
});
