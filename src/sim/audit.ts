/**
 * What the simulator saw, kept apart from what it enforced. The enforcing windows count
 * only the calls the server let through; the audit records every authenticated call that
 * arrived, so a test can hold a client to "never more than N in any minute" exactly,
 * whatever the server forgave.
 */
import { countInWindow, insertSorted, maxInAnyWindow } from './windows.js';

export const MINUTE_MS = 60_000;
export const HOUR_MS = 3_600_000;

export type RateScope = 'api_key_minute' | 'api_key_hour' | 'global_minute' | 'global_hour' | 'api_key_active_tasks';

export interface KeyAudit {
  /** Authenticated calls that arrived, whatever the answer (401s are in `unauthorized`). */
  calls: number;
  /** Calls not answered 429 (these are what the server's windows count). */
  accepted: number;
  rejected429: number;
  rejectedByScope: Partial<Record<RateScope, number>>;
  /** Calls presenting this key while it was not valid; non-zero only for keys the sim does not know. */
  unauthorized: number;
  maxCallsInAnyMinute: number;
  maxCallsInAnyHour: number;
  callsLastMinute: number;
  callsLastHour: number;
  maxActiveTasks: number;
  activeNow: number;
  creates: number;
  uploads: number;
  polls: number;
}

export interface KeyLeak {
  path: string;
  atMs: number;
  /** Fingerprint of the leaked key (never the key itself). */
  keyFingerprint: string;
}

export interface Audit {
  atMs: number;
  keys: Record<string, KeyAudit>;
  createsPerSource: Record<string, number>;
  uploadsPerSource: Record<string, number>;
  keyLeaks: KeyLeak[];
  /** Tasks accepted in total. */
  tasks: number;
  tasksByStatus: Record<string, number>;
  /** 401 answers, including those with no key at all. */
  unauthorized: number;
}

interface KeyRecord {
  times: number[];
  accepted: number;
  rejected429: number;
  rejectedByScope: Partial<Record<RateScope, number>>;
  unauthorized: number;
  maxActiveTasks: number;
  creates: number;
  uploads: number;
  polls: number;
}

export class AuditRecorder {
  private readonly keys = new Map<string, KeyRecord>();
  private readonly createsPerSource = new Map<string, number>();
  private readonly uploadsPerSource = new Map<string, number>();
  private readonly keyLeaks: KeyLeak[] = [];
  private tasks = 0;
  private unauthorizedTotal = 0;

  /** Known keys appear in the audit from the start, so "no calls" reads as zeros, not absence. */
  constructor(knownFingerprints: readonly string[]) {
    for (const fp of knownFingerprints) this.entry(fp);
  }

  private entry(fp: string): KeyRecord {
    let r = this.keys.get(fp);
    if (!r) {
      r = {
        times: [],
        accepted: 0,
        rejected429: 0,
        rejectedByScope: {},
        unauthorized: 0,
        maxActiveTasks: 0,
        creates: 0,
        uploads: 0,
        polls: 0,
      };
      this.keys.set(fp, r);
    }
    return r;
  }

  unauthorized(fp: string | undefined): void {
    this.unauthorizedTotal++;
    if (fp !== undefined) this.entry(fp).unauthorized++;
  }

  arrived(fp: string, now: number): void {
    insertSorted(this.entry(fp).times, now);
  }

  rejected(fp: string, scope: RateScope): void {
    const r = this.entry(fp);
    r.rejected429++;
    r.rejectedByScope[scope] = (r.rejectedByScope[scope] ?? 0) + 1;
  }

  passed(fp: string): void {
    this.entry(fp).accepted++;
  }

  created(fp: string, sourceId: string, activeIncludingNew: number): void {
    const r = this.entry(fp);
    r.creates++;
    r.maxActiveTasks = Math.max(r.maxActiveTasks, activeIncludingNew);
    this.tasks++;
    bump(this.createsPerSource, sourceId);
  }

  uploaded(fp: string, sourceId: string): void {
    this.entry(fp).uploads++;
    bump(this.uploadsPerSource, sourceId);
  }

  polled(fp: string): void {
    this.entry(fp).polls++;
  }

  keyLeak(path: string, atMs: number, keyFingerprint: string): void {
    this.keyLeaks.push({ path, atMs, keyFingerprint });
  }

  snapshot(now: number, activeNow: (fp: string) => number, tasksByStatus: Record<string, number>): Audit {
    const keys: Record<string, KeyAudit> = {};
    for (const [fp, r] of this.keys) {
      keys[fp] = {
        calls: r.times.length,
        accepted: r.accepted,
        rejected429: r.rejected429,
        rejectedByScope: { ...r.rejectedByScope },
        unauthorized: r.unauthorized,
        maxCallsInAnyMinute: maxInAnyWindow(r.times, MINUTE_MS),
        maxCallsInAnyHour: maxInAnyWindow(r.times, HOUR_MS),
        callsLastMinute: countInWindow(r.times, now, MINUTE_MS),
        callsLastHour: countInWindow(r.times, now, HOUR_MS),
        maxActiveTasks: r.maxActiveTasks,
        activeNow: activeNow(fp),
        creates: r.creates,
        uploads: r.uploads,
        polls: r.polls,
      };
    }
    return {
      atMs: now,
      keys,
      createsPerSource: Object.fromEntries(this.createsPerSource),
      uploadsPerSource: Object.fromEntries(this.uploadsPerSource),
      keyLeaks: this.keyLeaks.map((l) => ({ ...l })),
      tasks: this.tasks,
      tasksByStatus,
      unauthorized: this.unauthorizedTotal,
    };
  }
}

function bump(map: Map<string, number>, key: string): void {
  map.set(key, (map.get(key) ?? 0) + 1);
}
