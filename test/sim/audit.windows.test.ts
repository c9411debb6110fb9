import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fingerprintKey } from '../../src/spec/key.js';
import { countInWindow, maxInAnyWindow } from '../../src/sim/windows.js';
import { Rng } from '../../src/sim/random.js';
import { call, KEY, KEY2, newModel, START, virtualTime, type Harness } from './helpers.js';

let h: Harness;
beforeEach(() => {
  h = virtualTime();
});
afterEach(() => h.restore());

describe('audit call counts', () => {
  it('computes maxCallsInAnyMinute exactly over every call that arrived, 429s included', async () => {
    const model = newModel({ limits: { callsPerMinute: 3 } });
    const offsets = [0, 10_000, 59_999, 60_000, 61_000, 119_999];
    const statuses: number[] = [];
    for (const t of offsets) {
      h.clock.advanceTo(START + t);
      statuses.push((await call(model, 'GET', '/api/v1/usage')).status);
    }
    // At 61 s the accepted calls at 10 s, 59.999 s and 60 s fill the window of 3.
    expect(statuses).toEqual([200, 200, 200, 200, 429, 200]);
    const k = model.audit().keys[fingerprintKey(KEY)]!;
    // 10 s, 59.999 s, 60 s and 61 s lie within one minute (61 − 10 < 60).
    expect(k.maxCallsInAnyMinute).toBe(4);
    expect(k.maxCallsInAnyHour).toBe(6);
    // Now is 119.999 s: calls after 59.999 s.
    expect(k.callsLastMinute).toBe(3);
    expect(k.callsLastHour).toBe(6);
    expect(k).toMatchObject({ calls: 6, accepted: 5, rejected429: 1, creates: 0, uploads: 0, maxActiveTasks: 0 });
  });

  it('lists every configured key from the start, by fingerprint only', () => {
    const model = newModel();
    const audit = model.audit();
    expect(Object.keys(audit.keys).sort()).toEqual([fingerprintKey(KEY), fingerprintKey(KEY2)].sort());
    expect(audit.keys[fingerprintKey(KEY2)]!.calls).toBe(0);
    expect(JSON.stringify(audit)).not.toContain(KEY);
    expect(audit.tasks).toBe(0);
  });

  it('is served on /__sim/audit without a key and without counting', async () => {
    const model = newModel({ limits: { callsPerMinute: 1 } });
    for (let i = 0; i < 3; i++) {
      const res = await model.handleApi({ method: 'GET', path: '/__sim/audit', headers: {}, body: Buffer.alloc(0) });
      expect(res.status).toBe(200);
      expect(JSON.parse(res.body.toString()).keys[fingerprintKey(KEY)].calls).toBe(0);
    }
    expect((await call(model, 'GET', '/api/v1/credits')).status).toBe(200);
  });
});

describe('window arithmetic', () => {
  it('maxInAnyWindow and countInWindow agree with brute force on random timestamps', () => {
    const rng = new Rng(11);
    for (let round = 0; round < 50; round++) {
      const times = Array.from({ length: 1 + Math.floor(rng.uniform() * 60) }, () => Math.floor(rng.uniform() * 300)).sort((a, b) => a - b);
      const span = 1 + Math.floor(rng.uniform() * 80);
      let brute = 0;
      for (const end of times) brute = Math.max(brute, times.filter((t) => t > end - span && t <= end).length);
      expect(maxInAnyWindow(times, span)).toBe(brute);
      const now = Math.floor(rng.uniform() * 320);
      expect(countInWindow(times, now, span)).toBe(times.filter((t) => t > now - span && t <= now).length);
    }
  });
});
