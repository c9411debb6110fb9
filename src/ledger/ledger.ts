import type Database from 'better-sqlite3';
import { clock } from '../clock.js';
import { Calls } from './calls.js';
import { Identity } from './identity.js';
import { Held } from './held.js';
import { Items } from './items.js';
import { KeyFacts } from './keyFacts.js';
import { createsNeeded } from './needs.js';
import { openDatabase, type OpenOptions } from './open.js';
import { Outputs } from './outputs.js';
import { recoverStale, type RecoveryReport } from './recover.js';
import { readReport, type ReportData, type ReportOptions } from './report.js';
import { readStatus, type LedgerStatus } from './status.js';
import { Submissions } from './submissions.js';
import { Tasks } from './tasks.js';

/** The ledger: the only holder of state that matters. Only this folder runs SQL. */
export class Ledger {
  readonly items: Items;
  readonly submissions: Submissions;
  readonly tasks: Tasks;
  readonly outputs: Outputs;
  readonly calls: Calls;
  /** Inputs by content: names, duplicates, output files (issue 5). */
  readonly identity: Identity;
  readonly held: Held;
  /** What the ledger tells its keys' machine-wide stores (issue 12). */
  readonly keyFacts: KeyFacts;

  private constructor(
    readonly file: string,
    private readonly db: Database.Database,
  ) {
    this.items = new Items(db);
    this.submissions = new Submissions(db, this.items);
    this.tasks = new Tasks(db, this.items);
    this.outputs = new Outputs(db, this.items);
    this.calls = new Calls(db);
    this.identity = new Identity(db, this.items);
    this.held = new Held(db, this.items);
    this.keyFacts = new KeyFacts(db);
  }

  static open(file: string, opts: OpenOptions = {}): Ledger {
    return new Ledger(file, openDatabase(file, opts));
  }

  recover(): RecoveryReport {
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

  close(): void {
    if (this.db.open) this.db.close();
  }
}
