/**
 * Where faults strike: one decision per eligible event, drawn from the fault's own seeded
 * stream (the config, and the survivability rules the decisions keep, are in faults.ts).
 *
 * The model decides; the transports act. An answer that must be dropped, delayed or cut
 * short carries a signal (`drop`, `delayMs`, `truncated` on SimResponse) that server.ts
 * carries out on the socket and inprocess.ts turns into the TransportError or the short
 * body a real network would have produced.
 */
import { FAULT_NAMES, type ExpiredStatus, type FaultName, type RedirectCalls, type RedirectStatus, type ResolvedFaults } from './faults.js';
import { Rng } from './random.js';
import type { KnownRateLimitScope } from '../spec/scopes.js';

export interface Spurious429 {
  scope: KnownRateLimitScope;
  /** Seconds, when the answer carries headers; undefined for a bare 429. */
  retryAfterS: number | undefined;
}

/**
 * The fault decisions, each from its own stream. It keeps only what a decision needs (the
 * current 503 burst); the model's parts keep task, upload and URL state, and the audit records
 * what happened.
 */
export class FaultInjector {
  readonly config: ResolvedFaults;
  private readonly rngs: Record<FaultName, Rng>;
  private burstUntil = -Infinity;
  private redirected = 0;

  constructor(config: ResolvedFaults, seed: number) {
    this.config = config;
    const rngs = {} as Record<FaultName, Rng>;
    // Streams 0–2 belong to the model (ids, tasks); faults take 16 onwards, one each.
    FAULT_NAMES.forEach((name, i) => {
      rngs[name] = new Rng(seed, 16 + i);
    });
    this.rngs = rngs;
  }

  /**
   * A call at `now`: undefined when no burst is on, else the burst's end (ms). A burst
   * starting with this call comes back with `started`.
   */
  burst503(now: number): { untilMs: number; started?: { fromMs: number; untilMs: number } } | undefined {
    if (now < this.burstUntil) return { untilMs: this.burstUntil };
    const c = this.config.burst503;
    if (!this.chance('burst503', c.probability)) return undefined;
    const length = c.minMs + Math.floor(this.rngs.burst503.uniform() * (c.maxMs - c.minMs + 1));
    this.burstUntil = now + length;
    return { untilMs: this.burstUntil, started: { fromMs: now, untilMs: this.burstUntil } };
  }

  spurious429(isCreate: boolean): Spurious429 | undefined {
    const c = this.config.spurious429;
    const scopes = isCreate ? c.scopes : c.scopes.filter((s) => s !== 'api_key_active_tasks');
    if (scopes.length === 0 || !this.chance('spurious429', c.probability)) return undefined;
    const rng = this.rngs.spurious429;
    const scope = scopes[Math.floor(rng.uniform() * scopes.length)]!;
    const withHeaders = rng.uniform() < c.withHeaders;
    const retryAfterS = 1 + Math.floor(rng.uniform() * c.maxRetryAfterS);
    return { scope, retryAfterS: withHeaders ? retryAfterS : undefined };
  }

  droppedCreate(): boolean {
    return this.chance('droppedCreate', this.config.droppedCreate.probability);
  }

  /** The delay for this answer, or undefined. */
  slowAnswer(isCreate: boolean): number | undefined {
    const c = this.config.slowAnswer;
    if (c.createsOnly && !isCreate) return undefined;
    return this.chance('slowAnswer', c.probability) ? c.delayMs : undefined;
  }

  malformedJson(isCreate: boolean): boolean {
    const c = this.config.malformedJson;
    if (c.createsOnly && !isCreate) return false;
    return this.chance('malformedJson', c.probability);
  }

  notSubscribed200(): boolean {
    return this.chance('notSubscribed200', this.config.notSubscribed200.probability);
  }

  /** Whether a first result URL expires at this GET. */
  expireAtRandom(): boolean {
    return this.chance('expiredResultUrl', this.config.expiredResultUrl.probability);
  }

  expiredStatus(): ExpiredStatus {
    const s = this.config.expiredResultUrl.statuses;
    return s[Math.floor(this.rngs.expiredResultUrl.uniform() * s.length)]!;
  }

  /** How many of `length` bytes to send, or undefined to send them all. */
  truncate(length: number): number | undefined {
    if (length < 2 || !this.chance('truncatedDownload', this.config.truncatedDownload.probability)) return undefined;
    const fraction = 0.1 + 0.8 * this.rngs.truncatedDownload.uniform();
    return Math.min(length - 1, Math.max(1, Math.floor(length * fraction)));
  }

  /** Whether the service has forgotten an upload at this create (the model keeps it forgotten). */
  forgottenUpload(): boolean {
    return this.chance('forgottenUpload', this.config.forgottenUpload.probability);
  }

  /**
   * Whether this call is answered with a redirect, and where to: no draw, the calls named by
   * `redirect.calls`, the first `redirect.times` of them.
   */
  redirect(call: Exclude<RedirectCalls, 'all'> | 'other', pathAndQuery: string): { status: RedirectStatus; location: string } | undefined {
    const r = this.config.redirect;
    if (!r || this.redirected >= r.times || (r.calls !== 'all' && r.calls !== call)) return undefined;
    this.redirected++;
    return { status: r.status, location: `${r.to.replace(/\/+$/, '')}${pathAndQuery}` };
  }

  vanishedTask(ageMs: number): boolean {
    const c = this.config.vanishedTask;
    return ageMs >= c.minAgeMs && this.chance('vanishedTask', c.probability);
  }

  /** No draw at all when a fault is off, so a disabled fault costs nothing and shifts nothing. */
  private chance(name: FaultName, probability: number): boolean {
    if (probability <= 0) return false;
    return this.rngs[name].uniform() < probability;
  }
}

/** A strict prefix of a JSON object's text is never valid JSON: its closing brace is missing. */
export function malformedBody(body: Buffer): Buffer {
  const cut = Math.max(1, Math.floor(body.length / 2));
  return body.subarray(0, Math.min(cut, body.length - 1));
}
