import { existsSync, linkSync, statSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import { toDarkroomError, UsageError } from '../errors.js';
import { withMode, type StepConfig } from '../config/index.js';
import { Ledger, type KeptOutput, type RejectedPhoto } from '../ledger/index.js';
import { copyAtomically } from '../outputs/atomic.js';
import { checksumFile, nodeOutputFs, sameFile } from '../outputs/outputfs.js';
import { MODES, type Mode } from '../spec/capabilities.js';
import { resolveJob, type Job, type JobOptions } from './job.js';
import { retryJob, underLock, type RetrySummary } from './retry.js';

/** What `retry --rejected` put back to work. */
export interface RejectedRequeued {
  /** Photos sent back to be made again (one create per step each). */
  readonly redone: number;
  /** The rejected outputs kept aside, where they are now. */
  readonly kept: readonly string[];
  /** Photos whose decision changed on the review page meanwhile: left as they are. */
  readonly changed: number;
}

/** The note of the transition that sends a rejected photo back. */
const NOTE = 'darkroom retry --rejected';

/** The rejected photos of a ledger, read only. */
export function readRejected(file: string): RejectedPhoto[] {
  const reader = Ledger.open(file, { readonly: true });
  try {
    return reader.reviews.rejected();
  } finally {
    reader.close();
  }
}

/**
 * `--mode M`: one of the spec's modes, for a job with a step that takes one (enhance, unblur,
 * upscale); the steps as the redone photos will run them.
 */
export function stepsWithMode(steps: readonly StepConfig[], mode: string | undefined): StepConfig[] {
  if (mode === undefined) return [...steps];
  if (!(MODES as readonly string[]).includes(mode)) throw new UsageError(`--mode ${mode}: expected one of ${MODES.join(', ')}`);
  const moded = steps.map((s) => withMode(s, mode as Mode));
  if (!moded.some((s, i) => s !== steps[i])) {
    throw new UsageError(`--mode ${mode}: none of the job's steps takes a mode (enhance, unblur and upscale do); leave --mode out`);
  }
  return moded;
}

/**
 * Send rejected photos back to be made again, under the run lock (§ L6). Each rejected
 * output is kept aside first, under `<name>.rejected-<8 hex of its SHA-256>.<ext>` beside it:
 * a second name for the same file (a hard link; a copy where the file system has none),
 * made before the ledger changes, so whatever instant a kill comes at, the bytes paid for
 * are on disk under one of the two names. Then, in one transaction, the photo goes back to
 * its first step with the kept files recorded; then the output's own name is removed, for
 * the redone output to take. A second run of this repeats nothing already done.
 */
export async function requeueRejected(
  file: string,
  rejected: readonly RejectedPhoto[],
  opts: { readonly mode?: string | undefined; readonly breakLock?: string | undefined; readonly allowNetworkFs?: boolean },
): Promise<RejectedRequeued> {
  const only = new Set(rejected.map((r) => r.id));
  return underLock(file, 'retry --rejected', opts.breakLock, opts.allowNetworkFs ?? false, async (ledger) => {
    let redone = 0;
    let changed = 0;
    const kept: string[] = [];
    // A try a kill interrupted after its transaction: the old output's name still beside its kept one.
    for (const k of ledger.reviews.allKept()) if (sameFile(k.fromPath, k.path)) dropSecondName(k.fromPath, k.path);
    for (const photo of ledger.reviews.rejected()) {
      if (!only.has(photo.id)) continue;
      const aside: KeptOutput[] = [];
      for (const out of photo.outputs) {
        const k = await keepAside(out);
        if (k !== null) aside.push(k);
      }
      if (!ledger.reviews.sendBack(photo.id, photo.sha256, opts.mode ?? null, aside, NOTE)) {
        // Accepted (or cleared) on the page since it was listed: its output stays where it was.
        for (const k of aside) dropSecondName(k.path, k.fromPath);
        changed++;
        continue;
      }
      for (const k of aside) dropSecondName(k.fromPath, k.path);
      kept.push(...aside.map((k) => k.path));
      redone++;
    }
    return { redone, kept, changed };
  });
}

/** The kept name of an output, and the file there: linked (or copied) from the output, or already there from an earlier try. */
async function keepAside(out: { path: string; sha256: string | null }): Promise<KeptOutput | null> {
  const present = existsSync(out.path);
  const sha = out.sha256 ?? (present ? (await checksumFile(out.path)).sha256 : null);
  if (sha === null) return null;
  const p = path.parse(out.path);
  const kept = path.join(p.dir, `${p.name}.rejected-${sha.slice(0, 8)}${p.ext}`);
  if (!present) return existsSync(kept) ? { path: kept, fromPath: out.path, sha256: sha } : null;
  try {
    linkSync(out.path, kept);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') {
      // Kept by an earlier try that a kill interrupted: the same file, or the same bytes.
      if (!sameFile(out.path, kept) && (await checksumFile(kept)).sha256 !== sha) {
        throw new UsageError(`${kept} is in the way of keeping a rejected output aside: move it, then run retry --rejected again`);
      }
    } else if (['EPERM', 'EXDEV', 'ENOTSUP', 'EOPNOTSUPP', 'EMLINK'].includes(code ?? '')) {
      // No hard links here: a copy, written whole (temp file, fsync, rename) before the original goes.
      await copyAtomically(out.path, kept, p.dir);
    } else throw err;
  }
  nodeOutputFs.syncDir(p.dir);
  return { path: kept, fromPath: out.path, sha256: sha };
}

/** Remove `name` when `other` holds the same file (a second name of it): never the last name of anything. */
function dropSecondName(name: string, other: string): void {
  if (!existsSync(name) || !existsSync(other)) return;
  if (!sameFile(name, other)) {
    // A copy (no hard links): the same bytes are under `other`, written whole before.
    const a = statSync(name);
    const b = statSync(other);
    if (a.size !== b.size) return;
  }
  unlinkSync(name);
  nodeOutputFs.syncDir(path.dirname(name));
}

/**
 * The library's `retry()`: held and failed photos as retryJob puts them back, and with
 * `rejected: true` the photos rejected in review (with `mode`), asking nothing (the caller's yes).
 */
export async function retryAll(
  job: Job | string,
  what: { readonly held?: boolean; readonly failed?: boolean; readonly rejected?: boolean; readonly mode?: string },
  opts: JobOptions,
): Promise<RetrySummary> {
  const none: RetrySummary = { recreated: 0, repolled: 0, downloads: 0, note: null };
  const first = what.held || what.failed || !what.rejected ? await retryJob(job, what, opts) : none;
  if (!what.rejected) return first;
  try {
    const { config } = resolveJob(job, opts);
    stepsWithMode(config.steps, what.mode);
    const r = await requeueRejected(config.ledger, readRejected(config.ledger), { mode: what.mode, allowNetworkFs: config.allowNetworkFs });
    return { ...first, recreated: first.recreated + r.redone, keptAside: r.kept };
  } catch (err) {
    throw toDarkroomError(err);
  }
}
