/**
 * When to poll a task. Polls are calls like any other, so each one spent early is one
 * not spent on a create; each one spent late keeps a slot (3 per key) occupied by a
 * task that is already finished. This first policy aims the first poll at the
 * predicted completion and spaces later polls in proportion to the time already
 * waited; the scheduler issue tunes the trade-off by which resource binds.
 */

export interface LatencyEstimate {
  readonly medianMs: number;
  readonly samples: number;
}

/** Online estimate of task latency per capability: an EWMA of log-latency (latencies are lognormal-ish). */
export class LatencyModel {
  private readonly byCapability = new Map<string, { logMean: number; samples: number }>();

  constructor(private readonly alpha = 0.1) {}

  observe(capability: string, latencyMs: number): void {
    if (!(latencyMs > 0)) return;
    const x = Math.log(latencyMs);
    const cur = this.byCapability.get(capability);
    if (!cur) {
      this.byCapability.set(capability, { logMean: x, samples: 1 });
      return;
    }
    // Average plainly over the first samples, then forget slowly so a drifting service is followed.
    const a = Math.max(this.alpha, 1 / (cur.samples + 1));
    cur.logMean += a * (x - cur.logMean);
    cur.samples++;
  }

  estimate(capability: string): LatencyEstimate | undefined {
    const cur = this.byCapability.get(capability);
    return cur ? { medianMs: Math.exp(cur.logMean), samples: cur.samples } : undefined;
  }
}

export interface PollTiming {
  /** Fallback first poll when neither a hint nor history exists. */
  readonly defaultFirstMs: number;
  readonly minIntervalMs: number;
  readonly maxIntervalMs: number;
}

export const DEFAULT_POLL_TIMING: PollTiming = { defaultFirstMs: 5_000, minIntervalMs: 1_000, maxIntervalMs: 30_000 };

/** Delay from acceptance to the first poll: the service's waitTime hint, else what we have learned. */
export function firstPollDelay(hintMs: number | null, estimate: LatencyEstimate | undefined, t = DEFAULT_POLL_TIMING): number {
  if (hintMs !== null && hintMs > 0) return Math.max(t.minIntervalMs, hintMs);
  if (estimate) return Math.max(t.minIntervalMs, estimate.medianMs);
  return t.defaultFirstMs;
}

/** Delay before the next poll of a task still running after `elapsedMs`. */
export function nextPollDelay(elapsedMs: number, t = DEFAULT_POLL_TIMING): number {
  return Math.min(t.maxIntervalMs, Math.max(t.minIntervalMs, Math.round(elapsedMs * 0.25)));
}
