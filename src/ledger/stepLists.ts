import type Database from 'better-sqlite3';
import { clock } from '../clock.js';
import type { Items } from './items.js';
import { FIRST_STEP, type ItemRow } from './rows.js';
import { inTransaction, stmt } from './statements.js';
import {
  blocking,
  LEGACY_SIG,
  legacyJson,
  legacyMatches,
  listJson,
  NOT_STARTED,
  readStepsCensus,
  type StepsCensus,
} from './read/census.js';
import { StepsBlockedError } from '../errors.js';

/**
 * Which step list each photo follows (migrations/008_steps_identity.sql). The job's steps
 * can change between runs; a photo started under one list must never be finished under
 * another (a removed step left it on a step that no longer exists, an added one left its
 * output one step short). At the start of every run, before any call, the runner asks for
 * the census below and then either refuses (a photo started under other steps, and the
 * operator has not said what to do) or applies the job's list to every photo: those not
 * yet started adopt it, those started under other steps are redone from the first step
 * (`--redo-steps`), failed ones are bound to it for a later retry.
 *
 * A signature is the one of src/config/steps.ts; the lists themselves are kept in
 * `step_lists` so messages can name old steps after the job file changed. Photos of a
 * ledger older than migration 008 carry no signature: they followed the capabilities the
 * last run recorded in meta `pipeline` (options unknown), and are taken for the job's own
 * list when those capabilities are the job's.
 */

/** The note of the transition that sends a photo back to the first step under new steps; sidecars count tasks from it. */
export const STEPS_REDO_NOTE = 'steps changed';

export interface ApplyOptions {
  /** The job's list as canonical JSON, kept once in step_lists. */
  readonly stepsJson: string;
  /** The job's capabilities, to read unsigned photos of an older ledger. */
  readonly jobCaps: readonly string[];
  /** Redo started photos of other lists from the first step (the operator's `--redo-steps`). */
  readonly redo: boolean;
  /** The run's key fingerprints: a redone photo keeps its key when it is one of them, else it goes to one of them. */
  readonly keyFps: readonly string[];
}

export interface Applied {
  /** Photos sent back to the first step under the job's list. */
  readonly redone: number;
  /** Of them, tasks that were running, abandoned (their attempts marked ABANDONED). */
  readonly abandoned: number;
  /** Failed photos of other lists bound to the job's list (first step) for a later retry. */
  readonly rebound: number;
}

/** The ledger's writes for step lists. */
export class StepLists {
  constructor(
    private readonly db: Database.Database,
    private readonly items: Items,
  ) {}

  census(current: string, jobCaps: readonly string[]): StepsCensus {
    return readStepsCensus(this.db, current, jobCaps);
  }

  /** Whether every photo follows the list `current` (three seeks of the steps_sig index, not a read of every row). */
  private allFollow(current: string): boolean {
    const one = (where: string, ...args: string[]) =>
      stmt(this.db, `SELECT 1 FROM items WHERE ${where} LIMIT 1`).get(...args) !== undefined;
    return !one('steps_sig IS NULL') && !one('steps_sig < ?', current) && !one('steps_sig > ?', current);
  }

  /** The list recorded for a signature (canonical JSON), if any. */
  stepsOf(sig: string): string | null {
    return sig === LEGACY_SIG ? legacyJson(this.db) : listJson(this.db, sig);
  }

  /**
   * Bind every photo to the job's list, in one transaction, before any call: see the file
   * comment. Refuses (StepsBlockedError, nothing written) when started photos follow other
   * steps and `redo` is false.
   */
  apply(current: string, opts: ApplyOptions): Applied {
    return inTransaction(this.db, () => {
      const now = clock.now();
      const census = this.census(current, opts.jobCaps);
      const blocked = census.others.reduce((n, o) => n + blocking(o), 0);
      if (blocked > 0 && !opts.redo) throw new StepsBlockedError(blocked);
      stmt(this.db, 'INSERT INTO step_lists (sig, steps, first_ms) VALUES (?, ?, ?) ON CONFLICT (sig) DO NOTHING').run(
        current,
        opts.stepsJson,
        now,
      );
      const legacyFollowsJob = legacyMatches(this.db, opts.jobCaps);
      const oldSig = (r: ItemRow) => r.steps_sig ?? (legacyFollowsJob ? current : LEGACY_SIG);
      if (!legacyFollowsJob) {
        const legacy = legacyJson(this.db);
        if (legacy !== null)
          stmt(this.db, 'INSERT INTO step_lists (sig, steps, first_ms) VALUES (?, ?, ?) ON CONFLICT (sig) DO NOTHING').run(
            LEGACY_SIG,
            legacy,
            now,
          );
      }

      let redone = 0;
      let abandoned = 0;
      let rebound = 0;
      let spread = 0;
      // Every photo already follows the list (a run again under the same steps): no row to read.
      const rows = this.allFollow(current)
        ? []
        : stmt<[string], ItemRow>(this.db, 'SELECT * FROM items WHERE steps_sig IS NULL OR steps_sig != ? ORDER BY id').all(current);
      for (const r of rows) {
        const was = oldSig(r);
        // What the photo's tasks and files were made under, written down before it moves on.
        stmt(this.db, 'UPDATE attempts SET steps_sig = ? WHERE item_id = ? AND steps_sig IS NULL').run(was, r.id);
        stmt(this.db, 'UPDATE output_files SET steps_sig = ? WHERE item_id = ? AND steps_sig IS NULL').run(was, r.id);
        const started = !(NOT_STARTED.has(r.state) || (r.state === 'uploaded' && r.step_index === 0));
        if (!started || was === current) {
          stmt(this.db, 'UPDATE items SET steps_sig = ? WHERE id = ?').run(current, r.id);
          continue;
        }
        const note = `${STEPS_REDO_NOTE}: from ${was} to ${current}`;
        if (r.state === 'failed') {
          // No output and nothing in flight: bound to the first step of the job's list, so a
          // later retry runs the whole list from the start rather than half of each.
          this.items.patch(r.id, 'failed', { step_index: 0, attempt: 0, input_url: r.image_url, result_url: null, steps_sig: current });
          rebound++;
          continue;
        }
        if (r.state === 'active' && r.task_id !== null) {
          // Created and paid for under the old steps, and perhaps still running: its slot is
          // the service's until it ends, so the attempt stays open (ended_ms NULL).
          stmt(
            this.db,
            `UPDATE attempts SET status = 'ABANDONED', reason = ? WHERE id = (SELECT id FROM attempts WHERE item_id = ? AND task_id = ? ORDER BY id DESC LIMIT 1)`,
          ).run(`abandoned: ${note} (--redo-steps)`, r.id, r.task_id);
          abandoned++;
        }
        const keyFp =
          r.key_fp !== null && opts.keyFps.includes(r.key_fp)
            ? r.key_fp
            : opts.keyFps.length > 0
              ? opts.keyFps[spread++ % opts.keyFps.length]!
              : r.key_fp;
        const patch = { ...FIRST_STEP, steps_sig: current };
        if (r.image_url !== null) {
          // The upload (or the URL) is used again; if the service has forgotten it, the
          // create says so and the photo is uploaded again (run/stages/create.ts).
          const back = { ...patch, key_fp: keyFp, input_url: r.image_url };
          if (r.state === 'uploaded') this.items.patch(r.id, 'uploaded', back);
          else this.items.move(r.id, r.state, 'uploaded', back, `${note} (--redo-steps)`);
        } else {
          this.items.move(r.id, r.state, 'queued', { ...patch, key_fp: null, input_url: null }, `${note} (--redo-steps)`);
        }
        redone++;
      }
      return { redone, abandoned, rebound };
    });
  }

  /** Photos found since the run's start (discovery) follow the job's list from the first step. */
  stampUnsigned(current: string): number {
    return stmt(this.db, 'UPDATE items SET steps_sig = ? WHERE steps_sig IS NULL').run(current).changes;
  }

  /**
   * Files darkroom wrote for finished photos under another step list that the photo's
   * current output did not overwrite: an old output under another name or extension, an
   * old intermediate or sidecar. Only for photos done under their current list, so a photo
   * always has an output on disk.
   */
  staleFiles(itemId?: number): { path: string; itemId: number; kind: string }[] {
    const where = itemId === undefined ? '' : 'AND f.item_id = ?';
    return stmt<number[], { path: string; itemId: number; kind: string }>(
      this.db,
      `SELECT f.path, f.item_id AS itemId, f.kind FROM output_files f JOIN items i ON i.id = f.item_id
       WHERE i.state = 'done' AND i.steps_sig IS NOT NULL AND f.steps_sig IS NOT NULL AND f.steps_sig != i.steps_sig ${where}
       ORDER BY f.path`,
    ).all(...(itemId === undefined ? [] : [itemId]));
  }

  /** A stale file was removed: forget it (and any name's claim to it, so that name gets the current output). */
  forgetFile(path: string): void {
    inTransaction(this.db, () => {
      stmt(this.db, 'DELETE FROM output_files WHERE path = ?').run(path);
      stmt(this.db, 'UPDATE inputs SET output_path = NULL, written_ms = NULL WHERE output_path = ?').run(path);
    });
  }
}
