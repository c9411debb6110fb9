import type { Mode, Resolution } from '../spec/capabilities.js';
import type { Transport } from '../spec/wire.js';
import type { RateLimitInfo } from '../errors.js';

/** What a caller hands the client and what it hears back about each call (client.ts makes the calls). */

export interface CallOpts {
  /** The X-Request-Id to send; a create passes the one it recorded as `sending` (L1). */
  requestId?: string;
  signal?: AbortSignal;
}

export interface CreateBody {
  image: string;
  mode?: Mode;
  resolution?: Resolution;
  style?: string;
  prompt?: string;
  negativePrompt?: string;
}

/** One authenticated call as it happened, for the call log (L3). */
export interface CallRecord {
  atMs: number;
  method: string;
  /** Path template, e.g. /api/v1/tasks/{businessType}/{taskId}. */
  endpoint: string;
  /** Path actually requested, without the base URL's prefix. */
  path: string;
  httpStatus: number | null;
  businessCode: number | null;
  /** The service's requestId. */
  requestId: string | null;
  sentRequestId: string;
  durationMs: number;
  /** ApiError code, or null on success. */
  errorCode: string | null;
  /** false only when the request certainly never reached the service. */
  sent: boolean;
  /** Retry-After and RateLimit-* of the response, so the scheduler can correct its windows. */
  retryAfterMs: number | null;
  rateLimit: RateLimitInfo | null;
}

/**
 * The reservation one call was given in its key's budget before it was dispatched (every
 * call is recorded durably before it is sent). The client tells it, synchronously,
 * when the request is about to leave and what came of it; it belongs to one call only.
 */
export interface CallTicket {
  /** Right before the request is handed to the transport. */
  sending(atMs: number, endpoint: string, sentRequestId: string): void;
  /** Once per call that reached `sending`, before the call's promise settles (like onCall). */
  answered(rec: CallRecord): void;
}

export interface ApiClientOptions {
  baseUrl: string;
  apiKey: string;
  transport?: Transport;
  /** Per call, default 30000. */
  timeoutMs?: number;
  /**
   * Called exactly once per call that was attempted on the wire, synchronously before
   * the call's promise settles. If it throws, the call rejects with that error: an
   * unlogged call must not pass for a normal one (L3).
   */
  onCall?: (rec: CallRecord) => void;
  /** Name of the key's variable, for error messages ("set a valid key in …"). */
  keyEnv?: string;
}
