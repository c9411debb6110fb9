import { describe, expect, it } from 'vitest';
import { LatencyModel } from '../../src/scheduler/polling/latency.js';
import { Rng } from '../../src/sim/random.js';

/** Seeded standard normals: the simulator's generator, one for the whole code base. */
function gaussian(seed: number): () => number {
  const rng = new Rng(seed);
  return () => rng.normal();
}

describe('LatencyModel', () => {
  it('learns latency from the interval a task ended in, not from when it was seen', () => {
    const m = new LatencyModel();
    // Every task ended between a poll at 9 s that saw it running and one at 11 s that saw it done.
    for (let i = 0; i < 200; i++) m.observe('restore', null, 9_000, 11_000);
    const p = m.predict('restore', null);
    expect(Math.exp(p.mu)).toBeGreaterThan(9_000);
    expect(Math.exp(p.mu)).toBeLessThan(11_000);
  });

  it('recovers latency and the worth of the hint when most tasks are found done at their first poll', () => {
    // W3's tasks: median 5 s, σ 0.5; hint = latency × lognormal noise σ 0.3. Each is polled
    // at its predicted 80% point, then every 30% later: about three in four are first seen
    // done, an interval (0, t] that says only "by t".
    const z = gaussian(3);
    const m = new LatencyModel();
    let foundAtFirst = 0;
    for (let i = 0; i < 400; i++) {
      const L = 5_000 * Math.exp(0.5 * z());
      const hint = L * Math.exp(0.3 * z());
      const p = m.predict('enhance', hint);
      let t = Math.exp(p.mu + 0.84 * p.sigma);
      let last = 0;
      while (t < L) {
        last = t;
        t *= 1.3;
      }
      if (last === 0) foundAtFirst++;
      m.observe('enhance', hint, last, t);
    }
    expect(foundAtFirst).toBeGreaterThan(250);
    const usual = m.predict('enhance', null);
    expect(Math.abs(usual.mu - Math.log(5_000))).toBeLessThan(0.1);
    expect(usual.sigma).toBeGreaterThan(0.4);
    expect(usual.sigma).toBeLessThan(0.6);
    // with a hint the spread narrows to about (0.5⁻² + 0.3⁻²)^−½ = 0.26
    const hinted = m.predict('enhance', 5_000);
    expect(hinted.sigma).toBeGreaterThan(0.2);
    expect(hinted.sigma).toBeLessThan(0.34);
    expect(Math.abs(hinted.mu - Math.log(5_000))).toBeLessThan(0.1);
    // a long hint predicts long, but less than the hint says: the regression shrinks it
    const long = m.predict('enhance', 20_000);
    expect(Math.exp(long.mu)).toBeGreaterThan(8_000);
    expect(Math.exp(long.mu)).toBeLessThan(20_000);
  });

  it('follows the prior until it has seen tasks', () => {
    const m = new LatencyModel();
    expect(Math.exp(m.predict('upscale', null).mu)).toBeCloseTo(20_000, -2);
    expect(m.samples('upscale')).toBe(0);
  });
});
