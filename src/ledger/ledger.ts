import type Database from 'better-sqlite3';
import { clock } from '../clock.js';
import { Calls, KeyFacts } from './calls.js';
import { Failed } from './failed.js';
import { Following } from './follow.js';
import { InputChecks, Inputs } from './inputs.js';
import { Discovery } from './discovery.js';
import { OutputFiles } from './outputFiles.js';
import { Held, type HeldItem } from './held.js';
import { Items, createsNeeded, PhotoEvents } from './items.js';
import { LedgerFile, rescueDeleted, type Rescue } from './fileCheck.js';
import { RunLock, type HeldLock, type LockRequest } from './lock.js';
import type { LockHolder } from '../errors.js';
import { openLedgerFile, type OpenOptions } from './open.js';
import { Spend, Submissions } from './submissions.js';
import { Outputs } from './outputs.js';
import { readReport, readReportPhotos, type ReportData, type ReportOptions, type ReportPhoto } from './read/report.js';
import { readManifestPage, readManifestTasks, type ManifestFile, type ManifestTasks } from './read/manifest.js';
import { readStatus, type LedgerStatus } from './read/status.js';
import { Reviews } from './reviews.js';
import { StepLists } from './stepLists.js';
import { Tasks } from './tasks.js';
import type { ItemRow } from './rows.js';
import { stmt } from './statements.js';
import { assertSubmissionTransition } from './transitions.js';

/** The ledger: the only holder of state that matters. Only this folder runs SQL. */
export class Ledger {
  readonly items: Items;
  readonly submissions: Submissions;
  readonly tasks: Tasks;
  readonly outputs: Outputs;
  readonly calls: Calls;
  /** The names photos go by (inputs by content, duplicates, renames). */
  readonly inputs: Inputs;
  /** What a discovery found, reconciled with the items and names above. */
  readonly discovery: Discovery;
  /** The files darkroom wrote, and for whom. */
  readonly outputFiles: OutputFiles;
  readonly held: Held;
  /** Failed photos, for `darkroom retry --failed`. */
  readonly failed: Failed;
  /** What each input's full decode found, by content. */
  readonly checks: InputChecks;
  private readonly lock: RunLock;
  /** Which step list each photo follows. */
  readonly steps: StepLists;
  /** What the ledger tells its keys' machine-wide stores. */
  readonly keyFacts: KeyFacts;
  /** What this run's creates may have cost (the credits guard). */
  readonly spend: Spend;
  /** Photos reaching done/failed/held/skipped, read in order (`run --json`). */
  readonly photoEvents: PhotoEvents;
  /** A person's decisions about the outputs (`darkroom review`, `retry --rejected`). */
  readonly reviews: Reviews;
  /** A run that follows its input folder, as `status` shows it (`run --follow`). */
  readonly following: Following;

  private constructor(
    readonly file: string,
    private readonly db: Database.Database,
    /** The file as opened (device, inode), for writers; null for readers and ':memory:'. */
    private readonly opened: LedgerFile | null,
    /** The network file system it is on, when the job allowed one (ledger.allowNetworkFs: rollback journal, not WAL); else null. */
    readonly networkFs: string | null = null,
  ) {
    this.lock = new RunLock(db, file);
    this.items = new Items(db);
    this.submissions = new Submissions(db, this.items);
    this.tasks = new Tasks(db, this.items);
    this.outputs = new Outputs(db, this.items);
    this.calls = new Calls(db);
    this.inputs = new Inputs(db);
    this.discovery = new Discovery(db, this.items, this.inputs);
    this.outputFiles = new OutputFiles(db, this.items, this.inputs);
    this.held = new Held(db, this.items);
    this.failed = new Failed(db, this.items);
    this.checks = new InputChecks(db);
    this.steps = new StepLists(db, this.items);
    this.keyFacts = new KeyFacts(db);
    this.spend = new Spend(db);
    this.photoEvents = new PhotoEvents(db);
    this.reviews = new Reviews(db, this.items);
    this.following = new Following(db);
  }

  static open(file: string, opts: OpenOptions = {}): Ledger {
    const { db, networkFs } = openLedgerFile(file, opts);
    try {
      return new Ledger(file, db, opts.readonly ? null : LedgerFile.at(file), networkFs);
    } catch (err) {
      db.close();
      throw err;
    }
  }

  /**
   * L6: take the run lock before writing anything (LedgerBusyError when another run has it).
   * Then the path is checked to still name the file opened, so the lock held is the lock of
   * the ledger at that path.
   */
  acquireRunLock(req: LockRequest): HeldLock {
    const held = this.lock.acquire(req);
    try {
      this.checkFile();
    } catch (err) {
      held.release();
      throw err;
    }
    return held;
  }

  /** Who holds the run lock, if anyone. */
  lockHolder(): LockHolder | undefined {
    return this.lock.holder();
  }

  /**
   * Creates in flight when a run stopped (Held.inFlightOfStoppedRun), while no live run
   * holds the ledger (a live one's creates are in flight, not held): what the next writer's
   * recovery holds.
   */
  stoppedRunCreates(): HeldItem[] {
    return this.lock.holderGone() ? this.held.inFlightOfStoppedRun() : [];
  }

  /**
   * Throws LedgerMovedError when the ledger's path no longer names the file opened (moved,
   * replaced or deleted); one stat. Nothing to check for ':memory:'.
   */
  checkFile(): void {
    this.opened?.check();
  }

  /**
   * When the ledger was deleted during the run, save what this process still holds of it
   * beside its path (see fileCheck.ts, rescueDeleted); null when it was not deleted. Call once the run has
   * stopped, before close.
   */
  rescueIfDeleted(): Rescue | null {
    return this.opened ? rescueDeleted(this.db, this.file, this.opened.change()) : null;
  }

  /**
   * Every `sending` create becomes ambiguous: right only when no other run is sending. So
   * it refuses beside a live holder of the run lock, whoever forgot to take it.
   */
  recover(): RecoveryReport {
    this.lock.assertNoOtherHolder();
    return recoverStale(this.db, this.items);
  }

  status(now = clock.now()): LedgerStatus {
    return readStatus(this.db, now);
  }

  /** What `darkroom report` shows, read in one transaction (a consistent picture beside a running `run`). */
  report(opts: ReportOptions = {}, now = clock.now()): ReportData {
    return readReport(this.db, now, opts);
  }

  /** Creates the unfinished photos still need (for "credits needed" when 20601 stops a run). */
  /** Photos in path order after `after`, at most `limit`, as the report's pages show them (read/report.ts). */
  reportPhotos(after: string | null, limit: number): ReportPhoto[] {
    return readReportPhotos(this.db, after, limit);
  }

  /** A page of the files darkroom wrote, in path order, with what `darkroom manifest` says of each (read/manifest.ts). */
  manifestPage(after: string | null, limit: number, acceptedOnly: boolean): ManifestFile[] {
    return readManifestPage(this.db, after, limit, acceptedOnly);
  }

  /** The tasks that made each photo's outputs, and its redo's mode, for a page of the manifest. */
  manifestTasks(itemIds: readonly number[]): Map<number, ManifestTasks> {
    return readManifestTasks(this.db, itemIds);
  }

  createsNeeded(stepCount: number): number {
    return createsNeeded(this.db, stepCount);
  }

  getMeta(key: string): string | undefined {
    return (this.db.prepare('SELECT value FROM meta WHERE key = ?').get(key) as { value: string } | undefined)?.value;
  }

  setMeta(key: string, value: string): void {
    this.db.prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(key, value);
  }

  integrityCheck(): string {
    return (this.db.pragma('integrity_check', { simple: true }) as string) ?? 'unknown';
  }

  /** Releases the run lock if this connection holds it, then closes. */
  close(): void {
    if (!this.db.open) return;
    const token = this.lock.held;
    if (token !== undefined) this.lock.releaseToken(token);
    this.db.close();
  }
}

export interface RecoveryReport {
  /** Creates found still `sending`: their outcome is unknown (L2), their items held. */
  readonly ambiguous: number;
  readonly uploadsRestarted: number;
  readonly downloadsRestarted: number;
}

/**
 * Run at the start of every `darkroom run`: rows a killed run left mid-step are moved to
 * where the next run can take them safely. Uploads and downloads are repeated (they cost
 * no credit); a create that may have left the process is never repeated (L2).
 */
function recoverStale(db: Database.Database, items: Items): RecoveryReport {
  return db
    .transaction(() => {
      const now = clock.now();
      const sending = stmt<[], { id: number; item_id: number; request_id: string }>(
        db,
        "SELECT id, item_id, request_id FROM submissions WHERE state = 'sending'",
      ).all();
      for (const s of sending) {
        assertSubmissionTransition('sending', 'ambiguous');
        stmt(db, "UPDATE submissions SET state = 'ambiguous', error = ?, resolved_ms = ? WHERE id = ?").run(
          'the run stopped while this create was in flight',
          now,
          s.id,
        );
        const item = items.get(s.item_id);
        if (item?.state === 'submitting') {
          items.move(item.id, 'submitting', 'held', {
            reason: `create outcome unknown: the run stopped while it was in flight (X-Request-Id ${s.request_id})`,
            hold_kind: 'ambiguous',
          });
        }
      }
      // A `submitting` item whose submission is resolved cannot exist (one transaction), but
      // one without any row is a crash between begin's statements: it was never sent.
      for (const item of stmt<[], ItemRow>(db, "SELECT * FROM items WHERE state = 'submitting'").all()) {
        items.move(item.id, 'submitting', 'uploaded', { due_ms: 0 }, 'recovered: create never sent');
      }
      const uploads = stmt<[], ItemRow>(db, "SELECT * FROM items WHERE state = 'uploading'").all();
      for (const item of uploads) items.move(item.id, 'uploading', 'queued', { due_ms: 0 }, 'recovered: upload restarted');
      const downloads = stmt<[], ItemRow>(db, "SELECT * FROM items WHERE state = 'downloading'").all();
      for (const item of downloads) items.move(item.id, 'downloading', 'succeeded', { due_ms: 0 }, 'recovered: download restarted');
      return { ambiguous: sending.length, uploadsRestarted: uploads.length, downloadsRestarted: downloads.length };
    })
    .immediate();
}
