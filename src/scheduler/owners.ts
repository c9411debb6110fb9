import { hostname } from 'node:os';

/** Whether the process that owns key-store rows is still running. */
export type Liveness = (pid: number, host: string, now: number) => boolean;

/** This process, as key-store rows name their owner's process. */
export function thisProcess(): { pid: number; host: string } {
  return { pid: process.pid, host: hostname() };
}

/**
 * Liveness of processes on this machine by pid (signal 0 sends nothing; EPERM means it
 * exists under another user). A process on another host cannot be asked: its rows are
 * treated as an owner that is gone, which counts them until they expire — the safe side.
 *
 * A pid reused by an unrelated process makes a dead owner look alive, so its rows count
 * in full until a run of its ledger reconciles them; the cost is slots waited for, never a
 * limit broken. Answers are kept for `ttlMs`: the slot count asks on every pick.
 */
export function pidLiveness(ttlMs = 2000): Liveness {
  const me = hostname();
  const seen = new Map<number, { alive: boolean; at: number }>();
  return (pid, host, now) => {
    if (host !== me) return false;
    if (pid === process.pid) return true;
    const c = seen.get(pid);
    if (c && now - c.at < ttlMs && now >= c.at) return c.alive;
    let alive: boolean;
    try {
      process.kill(pid, 0);
      alive = true;
    } catch (err) {
      alive = (err as { code?: string }).code === 'EPERM';
    }
    seen.set(pid, { alive, at: now });
    return alive;
  };
}
