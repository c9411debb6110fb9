import { toDarkroomError, type PhotoCounts } from '../errors.js';
import { clock } from '../clock.js';
import type { Config } from '../config/index.js';
import { fingerprintKey } from '../spec/key.js';
import type { LedgerStatus } from '../ledger/read/status.js';
// From its module, not ledger/index.js: the 20 modules of the whole ledger are not needed here.
import { ProgressReader } from '../ledger/read/progress.js';
import type { ModelLimits } from '../progress/model.js';
import { buildProgress, type GuessedSlotsView, type KeyUseView, type Progress } from '../progress/snapshot.js';
import { KeyStore } from '../keystore/store.js';
import { guessedSlots } from '../scheduler/budget/keySlots.js';
import { pidLiveness } from '../scheduler/budget/keyCache.js';
import { stateDirFrom } from './stateDir.js';
import { resolveJob, type Job, type JobOptions } from './job.js';

/** The service's published per-key limits, used for the ETA when no job names its own. */
export const SPEC_LIMITS: ModelLimits = { callsPerMinute: 100, callsPerHour: 1000, activeTasks: 3 };

/**
 * Where a job's photos stand, read from its ledger alone: exactly the object
 * `darkroom status --json` prints (docs/guide/commands.md § Watching a run documents every field).
 * Fields are only ever added, never renamed or given another meaning.
 */
export interface StatusSummary extends Omit<StatusFigures, 'paidNotDownloaded'>, PhotoCounts {
  /** Photos whose inputs disappeared before they were done: outside `total` and every other figure. */
  readonly gone: number;
}

/** The rest of `status --json`: states, calls, problems, steps, tasks, limits, throughput, ETA. */
export type StatusFigures = ReturnType<typeof statusFigures>;

/**
 * The job's figures from `reader` (`config` null: a ledger named alone, with the spec's
 * limits), and from the keys' stores in `stateDir`, when given, the slots they count busy
 * that no live run tracks.
 */
export function readSummary(
  reader: ProgressReader,
  config: Config | null,
  keys: readonly string[] | undefined,
  stateDir?: string,
): { progress: Progress; status: LedgerStatus; summary: StatusSummary } {
  const now = clock.now();
  const facts = reader.read(now);
  const fps = keys ?? [...new Set([...Object.keys(facts.status.calls.perKey), ...Object.keys(facts.slots)])];
  const guessedSlots = stateDir === undefined ? undefined : guessedSlotsOf(stateDir, fps, now);
  const keyUse = stateDir === undefined ? undefined : keyUseOf(stateDir, fps, now, reader.ownerId());
  const following = reader.following();
  const progress = buildProgress(facts, {
    now,
    steps: config?.steps,
    limits: config?.limits ?? SPEC_LIMITS,
    keys,
    guessedSlots,
    keyUse,
    ...(following ? { following } : {}),
  });
  return { progress, status: facts.status, summary: statusSummary(progress, facts.status, config ? 'jobs' : 'default') };
}

/**
 * Per key, the slots its store on this machine counts busy that no live run tracks: held
 * creates, and a stopped run's creates and tasks (scheduler/budget/keySlots.ts guessed). Read
 * only, beside a run; a store missing or unreadable counts none.
 */
export function guessedSlotsOf(stateDir: string, fps: readonly string[], now: number): Record<string, GuessedSlotsView> {
  const live = pidLiveness();
  const out: Record<string, GuessedSlotsView> = {};
  for (const fp of fps) {
    const rows = KeyStore.peekSlots(stateDir, fp);
    if (!rows) continue;
    const g = guessedSlots(rows, now, (r) => r.pid !== null && r.host !== null && live(r.pid, r.host, now));
    if (g.held + g.deadRun > 0) out[fp] = { held: g.held, deadRun: g.deadRun, deadTasks: g.deadTasks, untilMs: g.untilMs };
  }
  return out;
}

const MINUTE_MS = 60_000;
const HOUR_MS = 3_600_000;

/**
 * Per key, its whole use as its store on this machine counts it (KeyUseView): every darkroom
 * process's calls and the other clients' the service's usage showed, and the task slots other
 * live jobs fill; `owner` is the job's own (its ledger's owner id, null before any run). Read
 * only, beside a run; a store missing or unreadable gives no entry.
 */
export function keyUseOf(stateDir: string, fps: readonly string[], now: number, owner: string | null): Record<string, KeyUseView> {
  const live = pidLiveness();
  const out: Record<string, KeyUseView> = {};
  for (const fp of fps) {
    const calls = KeyStore.peekCalls(stateDir, fp, now - HOUR_MS);
    if (!calls) continue;
    const inMinute = calls.filter((c) => c.at_ms > now - MINUTE_MS && c.counts_in !== 'hour');
    const inHour = calls.filter((c) => c.counts_in !== 'minute');
    const others = (list: typeof calls) => list.filter((c) => c.owner !== owner).length;
    const slots = KeyStore.peekSlots(stateDir, fp) ?? [];
    out[fp] = {
      minute: inMinute.length,
      hour: inHour.length,
      othersMinute: others(inMinute),
      othersHour: others(inHour),
      minuteFreesMs: inMinute.length > 0 ? inMinute[0]!.at_ms + MINUTE_MS : null,
      hourFreesMs: inHour.length > 0 ? inHour[0]!.at_ms + HOUR_MS : null,
      otherTasks: slots.filter(
        (r) =>
          (r.kind === 'create' || r.kind === 'active') &&
          r.owner !== owner &&
          r.expires_ms > now &&
          r.pid !== null &&
          r.host !== null &&
          live(r.pid, r.host, now),
      ).length,
    };
  }
  return out;
}

/** The job's keys by fingerprint, those set in `env` (none set: undefined, every key the ledger knows). */
export function keyFingerprints(config: Config, env: NodeJS.ProcessEnv): string[] | undefined {
  const keys = config.keyEnvs
    .map((n) => env[n]?.trim())
    .filter((k): k is string => Boolean(k))
    .map(fingerprintKey);
  return keys.length > 0 ? keys : undefined;
}

/**
 * `darkroom status --json`: the contract's fields (total, done, failed, held, pending) and
 * the original ones unchanged; the progress figures added beside them (docs/guide/commands.md documents
 * every field). Fields are only ever added, never renamed.
 */
function statusSummary(p: Progress, s: LedgerStatus, limitsFrom: 'jobs' | 'default'): StatusSummary {
  return {
    total: s.total,
    done: s.done,
    failed: s.failed,
    held: s.held,
    pending: s.pending,
    skipped: s.skipped,
    // Photos whose inputs disappeared before they were done; outside total
    gone: s.gone,
    ...statusFigures(p, s, limitsFrom),
  };
}

function statusFigures(p: Progress, s: LedgerStatus, limitsFrom: 'jobs' | 'default') {
  const perKeyTasks: Record<string, number> = {};
  for (const k of p.keys) perKeyTasks[k.key] = k.tasks;
  return {
    states: s.states,
    calls: { ...s.calls, uploads: p.calls.uploads, tasks: p.calls.tasks, account: p.calls.account },
    // Steps are numbered from 1 wherever the user reads them (text and JSON);
    // `index` stays the 0-based position in the job's `steps:` list.
    problems: s.problems.map((x) => ({ ...x, step: x.step + 1 })),
    atMs: p.atMs,
    // status.steps (done, working, waiting, failed, held per step) with the display's own figures
    // after them (running among these: the field order of this output does not change)
    steps: p.steps.map((st) => {
      const { running: _, ...ledger } = s.steps?.find((x) => x.step === st.index) ?? { running: 0 };
      return { ...ledger, step: st.index + 1, ...st };
    }),
    tasks: { active: p.keys.reduce((a, k) => a + k.tasks, 0), perKey: perKeyTasks },
    limits: p.limits ? { ...p.limits, from: limitsFrom } : null,
    throughput: p.throughput,
    callsPerStep: p.callsPerStep,
    eta: p.pending === 0 ? null : p.eta,
    paidNotDownloaded: s.paidNotDownloaded,
    notDownloaded: s.notDownloaded,
    metadataNotCarried: s.metadataNotCarried,
    metadataNotes: s.metadataNotes,
    // Over the done photos: decisions about their current outputs (darkroom review).
    review: s.review,
    // A run following its input folder (run --follow), while it does: since, last new photo, files settling.
    following: p.following,
    heldSlots: p.keys.flatMap((k) =>
      k.guessed
        ? [
            {
              key: k.key,
              slots: k.guessed.held + k.guessed.deadRun,
              heldCreates: k.guessed.held,
              deadRun: k.guessed.deadRun,
              deadTasks: k.guessed.deadTasks,
              untilMs: k.guessed.untilMs,
              // A stopped run's tasks are the next run's to poll: retry --held has none of them to free.
              freedBy: k.guessed.held + k.guessed.deadRun - k.guessed.deadTasks > 0 ? 'darkroom retry --held' : null,
            },
          ]
        : [],
    ),
  };
}

/** The library's `status()` (src/index.ts): the job's ledger read, never created or written. */
export async function statusOfJob(job: Job | string, opts: JobOptions): Promise<StatusSummary> {
  try {
    const { config, env } = resolveJob(job, opts);
    const reader = ProgressReader.open(config.ledger);
    try {
      return readSummary(reader, config, keyFingerprints(config, env), stateDirFrom(env)).summary;
    } finally {
      reader.close();
    }
  } catch (err) {
    throw toDarkroomError(err);
  }
}
