/**
 * Faults the simulator can inject, so a client's handling of a bad night is tested on
 * purpose rather than by luck. Three profiles (`none`, `flaky`, `hostile`) or an explicit
 * per-fault config; every decision is drawn from the fault's own seeded stream, so
 * `--seed N` replays the same faults for the same sequence of calls, and turning one fault
 * on or off does not move the draws of another.
 *
 * This file is the faults' configuration: names, profiles, and resolving a config into
 * every fault's settings. The decisions, drawn per call, are in faultInjector.ts.
 *
 * Survivability rules (so that a client that behaves correctly can finish every photo even
 * under `hostile`; they hold for explicit configs too):
 * - a task vanishes at most once per (source image, capability): a correct client creates
 *   a vanished task again once, and that second task stays;
 * - only a task's first result URL can expire at random; a URL re-issued by a fresh poll
 *   expires only by age (`afterMs` after it was issued);
 * - a result URL is never truncated twice in a row: a client that retries a short download
 *   once gets the whole file;
 * - an upload is forgotten at most once per source image: a correct client uploads a
 *   forgotten image again once, and that upload stays;
 * - a redirect (`redirect`, not part of any profile) stops a correct client with a config
 *   error: it is for tests of that stop, and with `times` set it ends, so a rerun finishes.
 */
import { RATE_LIMIT_SCOPES, type KnownRateLimitScope } from '../spec/scopes.js';

export const FAULT_NAMES = [
  'burst503',
  'spurious429',
  'droppedCreate',
  'slowAnswer',
  'malformedJson',
  'notSubscribed200',
  'expiredResultUrl',
  'truncatedDownload',
  'vanishedTask',
  'forgottenUpload',
] as const;
export type FaultName = (typeof FAULT_NAMES)[number];

export const FAULT_PROFILE_NAMES = ['none', 'flaky', 'hostile'] as const;
export type FaultProfileName = (typeof FAULT_PROFILE_NAMES)[number];

export type ExpiredStatus = 403 | 404 | 410;

/**
 * Per fault; a fault left out is off (or, with `base`, as in that profile). Probabilities are
 * per eligible event, named in each field's comment.
 */
export interface FaultConfig {
  /** Start from this profile; each fault given here replaces the profile's entry whole. Default 'none'. */
  base?: FaultProfileName;
  /**
   * 503/-1000 bursts. `probability`: per authenticated API call outside a burst, that a burst
   * starts with it. Every call during the burst is answered 503 with Retry-After (the seconds
   * left). Length drawn uniformly in [minMs, maxMs]; default 10–60 s.
   */
  burst503?: { probability: number; minMs?: number; maxMs?: number };
  /**
   * 429/-1000 while the client is within every limit. `probability`: per API call that passed
   * the real limits. The scope is drawn from `scopes` (default all five; api_key_active_tasks
   * only on creates). `withHeaders`: share of them that carry RateLimit-* and Retry-After
   * (default 0.5); the rest carry none. Retry-After is drawn in 1..maxRetryAfterS (default 10).
   */
  spurious429?: { probability: number; scopes?: readonly KnownRateLimitScope[]; withHeaders?: number; maxRetryAfterS?: number };
  /** `probability`: per accepted create, that the task is created and the connection then dropped unanswered. */
  droppedCreate?: { probability: number };
  /**
   * `probability`: per API call that got an answer, that the answer is held `delayMs` (default
   * 35 000, past the client's 30 s default timeout). A create's task exists before the wait.
   */
  slowAnswer?: { probability: number; delayMs?: number; createsOnly?: boolean };
  /** `probability`: per HTTP 200 / code 0 answer, that its body is cut to invalid JSON (a create's task exists). */
  malformedJson?: { probability: number; createsOnly?: boolean };
  /**
   * `probability`: per create that passed validation, that it is answered HTTP 200
   * `{"code":24403,"message":"not subscribed or out of the subscription period"}` without a
   * requestId (no task is created).
   */
  notSubscribed200?: { probability: number };
  /**
   * Result URLs that stop working. `probability`: per GET of a task's first result URL, that
   * it expires there and then. `afterMs`: every result URL expires this long after it was
   * issued (the first at SUCCESS, a re-issued one at the poll that issued it); default never.
   * An expired URL answers one of `statuses` (default 403, 404, 410), drawn once per URL; the
   * next poll of the task returns a new URL (`?v=2`, `?v=3`, …) that works.
   */
  expiredResultUrl?: { probability?: number; afterMs?: number; statuses?: readonly ExpiredStatus[] };
  /**
   * `probability`: per GET of a result that would be served whole, that it declares the full
   * Content-Length but sends 10–90% of the bytes (over HTTP, then closes the connection).
   */
  truncatedDownload?: { probability: number };
  /**
   * `probability`: per poll of an existing task at least `minAgeMs` old (default 0), that the
   * task is gone: 404/-60404 from then on, its slot freed, its credit never charged.
   */
  vanishedTask?: { probability: number; minAgeMs?: number };
  /**
   * `probability`: per create whose image is one of the service's own uploads (not yet
   * forgotten), that the service has forgotten that upload: the create is answered 400/-2
   * ("image not found", no task, no charge), and that URL keeps failing (creates: -2, GET:
   * 404). A fresh upload of the same image works.
   */
  forgottenUpload?: { probability: number };
  /**
   * Not a random fault and in no profile: API calls answered with a redirect to another
   * origin, as a moved service or a proxy in front of it would (`Location` = `to` + the
   * path and query asked for). `calls`: which calls (default every one); `times`: how many
   * (default without end). Counted in no window, like a 503; the audit counts it per key.
   */
  redirect?: { to: string; status?: RedirectStatus; calls?: RedirectCalls; times?: number };
}

export type RedirectStatus = 301 | 302 | 303 | 307 | 308;
export type RedirectCalls = 'all' | 'upload' | 'create' | 'poll' | 'account';

export interface ResolvedFaults {
  /** The profile named, or 'custom' for an explicit config. */
  profile: FaultProfileName | 'custom';
  burst503: { probability: number; minMs: number; maxMs: number };
  spurious429: { probability: number; scopes: KnownRateLimitScope[]; withHeaders: number; maxRetryAfterS: number };
  droppedCreate: { probability: number };
  slowAnswer: { probability: number; delayMs: number; createsOnly: boolean };
  malformedJson: { probability: number; createsOnly: boolean };
  notSubscribed200: { probability: number };
  expiredResultUrl: { probability: number; afterMs: number | undefined; statuses: ExpiredStatus[] };
  truncatedDownload: { probability: number };
  vanishedTask: { probability: number; minAgeMs: number };
  forgottenUpload: { probability: number };
  /** Null when off. */
  redirect: { to: string; status: RedirectStatus; calls: RedirectCalls; times: number } | null;
}

/** Client's default per-call timeout is 30 s; a slow answer must outlast it. */
const DEFAULT_SLOW_MS = 35_000;

const FAULT_PROFILES: Record<FaultProfileName, Omit<FaultConfig, 'base'>> = {
  none: {},
  flaky: {
    burst503: { probability: 0.002, minMs: 5_000, maxMs: 30_000 },
    spurious429: { probability: 0.02 },
    droppedCreate: { probability: 0.01 },
    slowAnswer: { probability: 0.01 },
    malformedJson: { probability: 0.01 },
    notSubscribed200: { probability: 0.002 },
    expiredResultUrl: { probability: 0.02, afterMs: 600_000 },
    truncatedDownload: { probability: 0.02 },
    vanishedTask: { probability: 0.01 },
    forgottenUpload: { probability: 0.005 },
  },
  hostile: {
    burst503: { probability: 0.005, minMs: 10_000, maxMs: 90_000 },
    spurious429: { probability: 0.08 },
    droppedCreate: { probability: 0.05 },
    slowAnswer: { probability: 0.05 },
    malformedJson: { probability: 0.05 },
    notSubscribed200: { probability: 0.005 },
    expiredResultUrl: { probability: 0.1, afterMs: 60_000 },
    truncatedDownload: { probability: 0.1 },
    vanishedTask: { probability: 0.05 },
    forgottenUpload: { probability: 0.04 },
  },
};

export const FAULT_PROFILE_DESCRIPTIONS: Record<FaultProfileName, string> = {
  none: 'no injected faults: the service behaves as its specification says',
  flaky:
    'occasional faults (about 1-2% each): 429s without cause, dropped, slow or garbled answers, expiring and truncated result URLs, vanishing tasks and uploads, a rare 503 burst',
  hostile:
    'frequent faults (5-10% each, a 24403 rarely) and a 503 burst every few minutes at full call rate; a client that follows the spec still finishes every photo',
};

/** For `darkroom sim --faults`: the profile name, or a clear Error naming the choices. */
export function parseFaults(name: string): FaultProfileName {
  const n = name.trim().toLowerCase();
  if ((FAULT_PROFILE_NAMES as readonly string[]).includes(n)) return n as FaultProfileName;
  throw new Error(`unknown fault profile "${name}"; choose one of: ${FAULT_PROFILE_NAMES.join(', ')}`);
}

/** One line naming the profile and what it does. */
export function describeFaults(profile: FaultProfileName): string {
  return `faults ${profile}: ${FAULT_PROFILE_DESCRIPTIONS[profile]}`;
}

export function resolveFaults(spec: FaultProfileName | FaultConfig | undefined): ResolvedFaults {
  const isName = typeof spec === 'string';
  if (isName && !(FAULT_PROFILE_NAMES as readonly string[]).includes(spec)) parseFaults(spec); // throws
  const name: FaultProfileName = isName ? spec : (spec?.base ?? 'none');
  const given: FaultConfig = isName ? {} : (spec ?? {});
  const c: FaultConfig = { ...FAULT_PROFILES[name], ...withoutUndefined(given) };
  const profile = isName || spec === undefined ? name : 'custom';

  const burstMin = c.burst503?.minMs ?? 10_000;
  const burstMax = c.burst503?.maxMs ?? Math.max(60_000, burstMin);
  const r: ResolvedFaults = {
    profile,
    burst503: { probability: p('burst503', c.burst503?.probability), minMs: burstMin, maxMs: burstMax },
    spurious429: {
      probability: p('spurious429', c.spurious429?.probability),
      scopes: [...(c.spurious429?.scopes ?? RATE_LIMIT_SCOPES)],
      withHeaders: p('spurious429.withHeaders', c.spurious429?.withHeaders ?? 0.5),
      maxRetryAfterS: c.spurious429?.maxRetryAfterS ?? 10,
    },
    droppedCreate: { probability: p('droppedCreate', c.droppedCreate?.probability) },
    slowAnswer: {
      probability: p('slowAnswer', c.slowAnswer?.probability),
      delayMs: c.slowAnswer?.delayMs ?? DEFAULT_SLOW_MS,
      createsOnly: c.slowAnswer?.createsOnly ?? false,
    },
    malformedJson: {
      probability: p('malformedJson', c.malformedJson?.probability),
      createsOnly: c.malformedJson?.createsOnly ?? false,
    },
    notSubscribed200: { probability: p('notSubscribed200', c.notSubscribed200?.probability) },
    expiredResultUrl: {
      probability: p('expiredResultUrl', c.expiredResultUrl?.probability),
      afterMs: c.expiredResultUrl?.afterMs,
      statuses: [...(c.expiredResultUrl?.statuses ?? [403, 404, 410])],
    },
    truncatedDownload: { probability: p('truncatedDownload', c.truncatedDownload?.probability) },
    vanishedTask: { probability: p('vanishedTask', c.vanishedTask?.probability), minAgeMs: c.vanishedTask?.minAgeMs ?? 0 },
    forgottenUpload: { probability: p('forgottenUpload', c.forgottenUpload?.probability) },
    redirect: c.redirect
      ? { to: c.redirect.to, status: c.redirect.status ?? 307, calls: c.redirect.calls ?? 'all', times: c.redirect.times ?? Infinity }
      : null,
  };
  if (r.redirect) {
    let to: URL;
    try {
      to = new URL(r.redirect.to);
    } catch {
      throw new Error('sim faults: redirect.to must be an http(s) URL');
    }
    if (to.protocol !== 'http:' && to.protocol !== 'https:') throw new Error('sim faults: redirect.to must be an http(s) URL');
    if (![301, 302, 303, 307, 308].includes(r.redirect.status))
      throw new Error('sim faults: redirect.status must be 301, 302, 303, 307 or 308');
    if (!['all', 'upload', 'create', 'poll', 'account'].includes(r.redirect.calls))
      throw new Error('sim faults: redirect.calls must be all, upload, create, poll or account');
    if (!(r.redirect.times >= 1)) throw new Error('sim faults: redirect.times must be at least 1');
  }

  if (!(r.burst503.minMs > 0 && r.burst503.maxMs >= r.burst503.minMs)) {
    throw new Error('sim faults: burst503 needs 0 < minMs <= maxMs');
  }
  for (const s of r.spurious429.scopes) {
    if (!RATE_LIMIT_SCOPES.includes(s)) throw new Error(`sim faults: unknown rate-limit scope "${s}"`);
  }
  if (r.spurious429.probability > 0 && r.spurious429.scopes.length === 0) {
    throw new Error('sim faults: spurious429 needs at least one scope');
  }
  if (!(Number.isInteger(r.spurious429.maxRetryAfterS) && r.spurious429.maxRetryAfterS >= 1)) {
    throw new Error('sim faults: spurious429.maxRetryAfterS must be a whole number of seconds >= 1');
  }
  if (!(r.slowAnswer.delayMs >= 0)) throw new Error('sim faults: slowAnswer.delayMs must be >= 0');
  const after = r.expiredResultUrl.afterMs;
  if (after !== undefined && !(after > 0)) throw new Error('sim faults: expiredResultUrl.afterMs must be > 0');
  if (r.expiredResultUrl.statuses.length === 0 || r.expiredResultUrl.statuses.some((s) => ![403, 404, 410].includes(s))) {
    throw new Error('sim faults: expiredResultUrl.statuses must be some of 403, 404, 410');
  }
  if (!(r.vanishedTask.minAgeMs >= 0)) throw new Error('sim faults: vanishedTask.minAgeMs must be >= 0');
  return r;
}

function p(name: string, v: number | undefined): number {
  const x = v ?? 0;
  if (!(x >= 0 && x <= 1)) throw new Error(`sim faults: ${name} must be a probability in [0, 1]`);
  return x;
}

function withoutUndefined(c: FaultConfig): FaultConfig {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(c)) if (v !== undefined && k !== 'base') out[k] = v;
  return out as FaultConfig;
}
