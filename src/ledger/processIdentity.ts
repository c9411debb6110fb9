import { readFileSync, readlinkSync } from 'node:fs';
import { hostname } from 'node:os';
import type { ProcessIdentity } from '../errors.js';

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
