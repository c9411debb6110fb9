import { probeService, redact, serviceAnswer, type CallRecord, type ProbeResult, type Transport } from '../api/index.js';
import { clock } from '../clock.js';
import { LOG_ONLY, type Logger } from '../log.js';
import type { Feedback } from '../scheduler/laneTypes.js';
import { ServiceUrlError } from '../errors.js';

/**
 * A wrong service stops a run fast; a blip never does.
 *
 * - Before the first keyed call, the base URL must show itself to be the API (probeService:
 *   one request without the key). An answer that is not the API's (a 404 or 200 page, a
 *   redirect) stops the run at once; no answer at all (refused, DNS, TLS, timeout, a bare
 *   5xx) is tried again with backoff for FIRST_CONTACT_MS, then stops it. Either way: exit
 *   2, nothing sent with the key, every photo still pending.
 * - Once the service has answered, a call it does not answer starts an outage: the key's
 *   lane pauses until the next try (backoff ×1.5 from 1 s to 60 s, ±20 % jitter), the
 *   progress display counts down to it, and the first answer ends it.
 */
const FIRST_CONTACT_MS = 20_000;
const FIRST_DELAY_MS = 1000;
const MAX_DELAY_MS = 60_000;
const GROWTH = 1.5;

/** What the progress display shows while the service does not answer. */
export interface ServiceOutage {
  /** When the first unanswered call of this outage was sent (ms since the epoch). */
  readonly sinceMs: number;
  /** When the next call will be tried. */
  readonly nextTryAtMs: number;
  /** Tries that found it out (calls in flight together count once). */
  readonly tries: number;
  /** The last failure, e.g. "ECONNREFUSED". */
  readonly reason: string;
}

export class ServiceContact {
  #answered = false;
  #outage: ServiceOutage | undefined;

  constructor(
    private readonly random: () => number,
    private readonly log?: Logger,
  ) {}

  /** The service answered at least once in this run (the first contact, or any call since). */
  get answered(): boolean {
    return this.#answered;
  }

  /** The outage under way, or null while the service answers. */
  outage(): ServiceOutage | null {
    return this.#outage ?? null;
  }

  /** Every keyed call, as the client records it. */
  observe(rec: CallRecord): void {
    if (rec.httpStatus !== null && rec.httpStatus >= 300 && rec.httpStatus < 400) return; // a redirect stops the run (stages/configStop.ts)
    const a = serviceAnswer(rec.httpStatus, rec.businessCode);
    if (a === 'api') this.#back();
    else this.#failed(rec.atMs, rec.errorCode ?? (rec.httpStatus === null ? 'no answer' : `HTTP ${rec.httpStatus}`));
  }

  /** A stage's feedback, with the lane paused until the next try while the service is out. */
  during(fb: Feedback): Feedback {
    const o = this.#outage;
    if (!o || o.nextTryAtMs <= clock.now()) return fb;
    return { ...fb, pauseUntilMs: Math.max(fb.pauseUntilMs ?? 0, o.nextTryAtMs) };
  }

  #back(): void {
    this.#answered = true;
    const o = this.#outage;
    if (!o) return;
    this.#outage = undefined;
    this.log?.warn(
      { sinceMs: o.sinceMs, tries: o.tries },
      `the service answers again (unreachable for ${Math.round((clock.now() - o.sinceMs) / 1000)} s)`,
    );
  }

  /** `first`: during the first contact, whose verdict is the operator's one line (the wait is the log's). */
  #failed(sentAtMs: number, reason: string, first = false): void {
    const now = clock.now();
    const o = this.#outage;
    if (!o) {
      this.#outage = { sinceMs: sentAtMs, nextTryAtMs: now + this.#delay(1), tries: 1, reason };
      this.log?.warn(
        { reason, ...(first ? LOG_ONLY : {}) },
        `service unreachable since ${clockTime(sentAtMs)} (${reason}); waiting it out, next try in ${Math.round((this.#outage.nextTryAtMs - now) / 1000)} s`,
      );
      return;
    }
    // Calls sent before the current pause ended were part of the same try.
    const newTry = sentAtMs >= o.nextTryAtMs - 1;
    const tries = newTry ? o.tries + 1 : o.tries;
    this.#outage = { ...o, reason, tries, nextTryAtMs: newTry ? now + this.#delay(tries) : Math.max(o.nextTryAtMs, now) };
  }

  #delay(tries: number): number {
    const base = Math.min(MAX_DELAY_MS, FIRST_DELAY_MS * GROWTH ** (tries - 1));
    return Math.round(base * (0.8 + 0.4 * this.random()));
  }

  /**
   * The first contact: null once the base URL answered as the API, else the operator's
   * line and the code `plan` gives for the same URL (the run stops, exit 2). Returns null
   * too when `signal` aborts (an interrupt).
   */
  async firstContact(
    baseUrl: string,
    o: { transport?: Transport; timeoutMs: number; signal?: AbortSignal; secrets: readonly string[]; windowMs?: number },
  ): Promise<{ readonly message: string; readonly code: 'NOT_THE_SERVICE' | 'SERVICE_UNREACHABLE' } | null> {
    const started = clock.now();
    const windowMs = o.windowMs ?? FIRST_CONTACT_MS;
    const check = `${CHECK}; nothing was sent with the key and every photo is still pending`;
    for (;;) {
      if (o.signal?.aborted) return null;
      const sentAt = clock.now();
      const left = started + windowMs - sentAt;
      const r = await probeService(baseUrl, {
        timeoutMs: Math.max(1000, Math.min(o.timeoutMs, 10_000, left)),
        secrets: o.secrets,
        ...(o.transport ? { transport: o.transport } : {}),
        ...(o.signal ? { signal: o.signal } : {}),
      });
      if (o.signal?.aborted) return null;
      if (r.answer === 'api') {
        this.#back();
        return null;
      }
      if (r.answer === 'not-api') return { message: notTheService(baseUrl, r, o.secrets, check), code: 'NOT_THE_SERVICE' };
      if (clock.now() >= started + windowMs) {
        this.#outage = undefined;
        const where = redact(displayUrl(baseUrl), o.secrets);
        const message = `no answer from the service at ${where} for ${Math.round((clock.now() - started) / 1000)} s since the run started (${r.detail}); ${check}`;
        return { message, code: 'SERVICE_UNREACHABLE' };
      }
      this.#failed(sentAt, r.detail, true);
      // The last try at the window's end, so a blip shorter than the window is ridden out.
      const next = Math.min(this.#outage!.nextTryAtMs, started + windowMs);
      this.#outage = { ...this.#outage!, nextTryAtMs: next };
      try {
        await clock.sleep(Math.max(0, next - clock.now()), o.signal);
      } catch {
        return null; // interrupted
      }
    }
  }
}

const CHECK = 'check service.baseUrl (or --base-url, DARKROOM_BASE_URL) and that this machine reaches it';

function notTheService(baseUrl: string, r: ProbeResult, secrets: readonly string[], check: string): string {
  return r.redirect ?? `${redact(displayUrl(baseUrl), secrets)} is not the image service's API (${r.detail}); ${check}`;
}

/**
 * One probe (`darkroom plan`, before it asks the account anything): throws ServiceUrlError
 * when the base URL is not the service or does not answer. No retry: nothing waits on it.
 */
export async function checkServiceUrl(
  baseUrl: string,
  o: { transport?: Transport; timeoutMs: number; secrets: readonly string[] },
): Promise<void> {
  const r = await probeService(baseUrl, {
    timeoutMs: Math.min(o.timeoutMs, 10_000),
    secrets: o.secrets,
    ...(o.transport ? { transport: o.transport } : {}),
  });
  if (r.answer === 'api') return;
  if (r.answer === 'not-api') throw new ServiceUrlError(notTheService(baseUrl, r, o.secrets, CHECK), 'NOT_THE_SERVICE');
  throw new ServiceUrlError(
    `no answer from the service at ${redact(displayUrl(baseUrl), o.secrets)} (${r.detail}); ${CHECK}`,
    'SERVICE_UNREACHABLE',
  );
}

/** The base URL as the operator wrote it, without a trailing slash. */
function displayUrl(baseUrl: string): string {
  const u = new URL(baseUrl);
  return `${u.origin}${u.pathname.replace(/\/+$/, '')}`;
}

/** "03:12:05", local time: when the outage began, for the countdown line. */
function clockTime(ms: number): string {
  const d = new Date(ms);
  return [d.getHours(), d.getMinutes(), d.getSeconds()].map((n) => String(n).padStart(2, '0')).join(':');
}
