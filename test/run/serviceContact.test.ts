import { afterEach, describe, expect, it } from 'vitest';
import type { CallRecord } from '../../src/api/index.js';
import { installClock, VirtualClock } from '../../src/clock.js';
import { ServiceContact } from '../../src/run/serviceContact.js';
import { serviceText } from '../../src/progress/render.js';

let restore: (() => void) | undefined;
afterEach(() => restore?.());

const rec = (atMs: number, httpStatus: number | null, businessCode: number | null): CallRecord => ({
  atMs,
  method: 'GET',
  endpoint: '/api/v1/tasks/{businessType}/{taskId}',
  path: '/x',
  httpStatus,
  businessCode,
  requestId: null,
  sentRequestId: 'dr-1',
  durationMs: 1,
  errorCode: httpStatus === null ? 'NOT_SENT' : null,
  sent: httpStatus !== null,
  retryAfterMs: null,
  rateLimit: null,
});

describe('ServiceContact: an outage after the service answered', () => {
  it('backs off per try (calls in flight together count once), pauses the lanes, counts down, and ends at the first answer', () => {
    const clock = new VirtualClock(1_795_000_000_000);
    restore = installClock(clock);
    const c = new ServiceContact(() => 0.5);
    c.observe(rec(clock.now(), 200, 0));
    expect(c.answered).toBe(true);
    expect(c.outage()).toBeNull();
    const t0 = clock.now();
    c.observe(rec(t0, null, null));
    c.observe(rec(t0, null, null)); // sent together: the same try
    const o1 = c.outage()!;
    expect(o1).toMatchObject({ sinceMs: t0, tries: 1, nextTryAtMs: t0 + 1000 });
    expect(c.during({}).pauseUntilMs).toBe(t0 + 1000);
    expect(serviceText(o1, t0 + 200)).toMatch(/^service unreachable since \d\d:\d\d:\d\d; next try in 1 s$/);
    clock.advanceBy(1000);
    c.observe(rec(clock.now(), 502, null)); // a gateway's bare 502: still out
    expect(c.outage()).toMatchObject({ tries: 2, nextTryAtMs: clock.now() + 1500 });
    clock.advanceBy(1500);
    c.observe(rec(clock.now(), 404, null)); // a proxy's page: not the service either
    expect(c.outage()!.tries).toBe(3);
    c.observe(rec(clock.now(), 429, -1000)); // the API's envelope: it answers again
    expect(c.outage()).toBeNull();
    expect(c.during({})).toEqual({});
  });
});
