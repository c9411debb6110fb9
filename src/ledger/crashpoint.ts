/**
 * Deliberate crashes for the crash test (`npm run test:crash`).
 *
 * `DARKROOM_CRASH_AT=<phase>:<n>` makes the process kill itself with SIGKILL — no
 * handler, no `finally`, no flush: what a power cut or the OOM killer does — the n-th
 * time (1-based, counted per process) it passes the named point:
 *
 *   upload    an upload's answer is in, not yet recorded (the restart uploads again)
 *   create    a create's answer is in, not yet recorded (the task exists; the ledger
 *             still says `sending`, so the restart must hold it, never resend it)
 *   poll      a poll's answer is in, not yet recorded
 *   download  a result is in its temp file, fsynced, not yet renamed into place
 *   output    the result is renamed into place, the item not yet marked done
 *   ledger    inside an item's state change, after the UPDATE, before COMMIT
 *
 * Unset (always, outside the crash test), each point costs one comparison.
 */
const PHASES = ['upload', 'create', 'poll', 'download', 'output', 'ledger'] as const;
export type CrashPhase = (typeof PHASES)[number];

interface Plan {
  readonly phase: CrashPhase;
  readonly at: number;
  seen: number;
}

let plan: Plan | null | undefined;

function readPlan(): Plan | null {
  const raw = process.env.DARKROOM_CRASH_AT;
  if (!raw) return null;
  const m = /^([a-z]+):([1-9][0-9]*)$/.exec(raw.trim());
  if (!m || !(PHASES as readonly string[]).includes(m[1]!)) {
    throw new Error(`DARKROOM_CRASH_AT must be <phase>:<n> with phase one of ${PHASES.join(', ')}; got ${JSON.stringify(raw)}`);
  }
  return { phase: m[1] as CrashPhase, at: Number(m[2]), seen: 0 };
}

export function crashPoint(phase: CrashPhase): void {
  if (plan === undefined) plan = readPlan();
  if (plan === null || plan.phase !== phase) return;
  if (++plan.seen === plan.at) process.kill(process.pid, 'SIGKILL');
}

export const CRASH_PHASES: readonly CrashPhase[] = PHASES;
