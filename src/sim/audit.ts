/**
 * What the simulator saw, kept apart from what it enforced. The enforcing windows count
 * the calls the limits saw (429s too, not 503s of a burst nor redirects); the audit records
 * every authenticated call that arrived, so a test can hold a client to "never more than N
 * in any minute" exactly.
 */
import { FAULT_NAMES, type FaultName } from './faults.js';
import type { KnownRateLimitScope } from '../spec/scopes.js';
import { HOUR_MS, MINUTE_MS } from '../spec/window.js';
import { countInWindow, insertSorted, maxInAnyWindow } from './windows.js';

/** The random faults, and the `redirect` steering (no draw, in no profile). */
export type AuditedFault = FaultName | 'redirect';

export interface KeyAudit {
  /** Authenticated calls that arrived, whatever the answer (401s are in `unauthorized`). */
  calls: number;
  /**
   * Calls that passed the limits and the fault gate (the server's windows count these and
   * the 429s): calls = accepted + rejected429 + injected429 + answered503 + redirected.
   */
  accepted: number;
  /** 429s the server's real limits gave; injected ones are in `injected429`. */
  rejected429: number;
  rejectedByScope: Partial<Record<KnownRateLimitScope, number>>;
  /** 429s injected by the fault layer while the key was within its limits. */
  injected429: number;
  /** Calls answered 503 during an injected burst. */
  answered503: number;
  /** Calls answered with a redirect (the `redirect` fault): calls = accepted + rejected429 + injected429 + answered503 + redirected. */
  redirected: number;
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

/** A create whose task exists but whose answer the client could not read (or not in time). */
export interface FaultedCreate {
  fault: Extract<FaultName, 'droppedCreate' | 'slowAnswer' | 'malformedJson'>;
  /** The X-Request-Id header the client sent, as sent; null when it sent none. */
  sentRequestId: string | null;
  /** The requestId the answer carried (or would have). */
  requestId: string;
  taskId: string;
  sourceId: string;
  atMs: number;
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
  /** Injected faults by name, every name present (0 when none was injected); `redirect` counts redirected calls. */
  faults: Record<AuditedFault, number>;
  /** Creates that were accepted although the client got no usable answer: ambiguous but real. */
  faultedCreates: FaultedCreate[];
  /** Injected 503 bursts, in order. */
  bursts503: Array<{ fromMs: number; untilMs: number }>;
}

/** A key's audit figures worked out when the audit is taken: from the call times, and the tasks active then. */
type TakenAtSnapshot = 'calls' | 'maxCallsInAnyMinute' | 'maxCallsInAnyHour' | 'callsLastMinute' | 'callsLastHour' | 'activeNow';

/** What the recorder keeps per key: the arrival times, and every other figure counted as it goes. */
interface KeyRecord extends Omit<KeyAudit, TakenAtSnapshot> {
  times: number[];
}

export class AuditRecorder {
  private readonly keys = new Map<string, KeyRecord>();
  private readonly createsPerSource = new Map<string, number>();
  private readonly uploadsPerSource = new Map<string, number>();
  private readonly keyLeaks: KeyLeak[] = [];
  private tasks = 0;
  private unauthorizedTotal = 0;
  private readonly faultCounts = Object.fromEntries([...FAULT_NAMES, 'redirect'].map((n) => [n, 0])) as Record<AuditedFault, number>;
  private readonly faultedCreates: FaultedCreate[] = [];
  private readonly bursts: Array<{ fromMs: number; untilMs: number }> = [];

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
        injected429: 0,
        answered503: 0,
        redirected: 0,
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

  rejected(fp: string, scope: KnownRateLimitScope): void {
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

  /** An injected fault; `fp` when it answered a key's call (a 503 or a 429 then counts for that key too). */
  fault(name: AuditedFault, fp?: string): void {
    this.faultCounts[name]++;
    if (fp === undefined) return;
    if (name === 'burst503') this.entry(fp).answered503++;
    if (name === 'spurious429') this.entry(fp).injected429++;
    if (name === 'redirect') this.entry(fp).redirected++;
  }

  faultedCreate(entry: FaultedCreate): void {
    this.faultedCreates.push({ ...entry });
  }

  burst(fromMs: number, untilMs: number): void {
    this.bursts.push({ fromMs, untilMs });
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
        injected429: r.injected429,
        answered503: r.answered503,
        redirected: r.redirected,
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
      faults: { ...this.faultCounts },
      faultedCreates: this.faultedCreates.map((f) => ({ ...f })),
      bursts503: this.bursts.map((b) => ({ ...b })),
    };
  }
}

function bump(map: Map<string, number>, key: string): void {
  map.set(key, (map.get(key) ?? 0) + 1);
}
