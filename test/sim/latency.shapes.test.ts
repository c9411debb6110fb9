import { describe, expect, it } from 'vitest';
import { drawLatency, driftMedianMs, meanLatencyMs, type LatencyShape } from '../../src/sim/latencyShapes.js';
import { resolveSimOptions } from '../../src/sim/options.js';
import { Rng } from '../../src/sim/random.js';

const draws = (shape: LatencyShape, n: number, seed = 5, at = () => 0) => {
  const rng = new Rng(seed, 1);
  return Array.from({ length: n }, () => drawLatency(rng, shape, at()));
};

describe('simulator latency shapes (issue 16)', () => {
  it('a lognormal draws what it drew before shapes existed: two uniforms, the same number', () => {
    const a = new Rng(9, 1);
    const b = new Rng(9, 1);
    for (let i = 0; i < 50; i++) {
      expect(drawLatency(a, { medianMs: 20_000, sigma: 0.5 }, 0)).toBe(Math.max(1, Math.round(b.lognormal(20_000, 0.5))));
      // the draws after it (outcome, hint noise) stay aligned
      expect(a.uniform()).toBe(b.uniform());
    }
  });

  it('every shape takes exactly two uniforms, so a task stream stays aligned whatever the shape', () => {
    const shapes: LatencyShape[] = [
      { kind: 'uniform', minMs: 6_000, maxMs: 18_000 },
      { kind: 'bimodal', fast: { minMs: 4_000, maxMs: 6_000 }, slow: { minMs: 40_000, maxMs: 60_000 }, slowShare: 0.3 },
      { kind: 'drift', fromMedianMs: 4_000, toMedianMs: 20_000, overMs: 3_600_000, sigma: 0.5 },
    ];
    for (const s of shapes) {
      const a = new Rng(4, 1);
      const b = new Rng(4, 1);
      drawLatency(a, s, 0);
      b.uniform();
      b.uniform();
      expect(a.uniform()).toBe(b.uniform());
    }
  });

  it('uniform stays in its range and averages its middle', () => {
    const xs = draws({ kind: 'uniform', minMs: 6_000, maxMs: 18_000 }, 4000);
    expect(Math.min(...xs)).toBeGreaterThanOrEqual(6_000);
    expect(Math.max(...xs)).toBeLessThanOrEqual(18_000);
    expect(Math.abs(xs.reduce((s, x) => s + x, 0) / xs.length - 12_000)).toBeLessThan(300);
  });

  it('bimodal puts its share in the slow hump and nothing between the humps', () => {
    const shape: LatencyShape = {
      kind: 'bimodal',
      fast: { minMs: 4_000, maxMs: 6_000 },
      slow: { minMs: 40_000, maxMs: 60_000 },
      slowShare: 0.3,
    };
    const xs = draws(shape, 4000);
    const slow = xs.filter((x) => x >= 40_000).length / xs.length;
    expect(slow).toBeGreaterThan(0.27);
    expect(slow).toBeLessThan(0.33);
    expect(xs.every((x) => (x >= 4_000 && x <= 6_000) || (x >= 40_000 && x <= 60_000))).toBe(true);
    expect(meanLatencyMs(shape)).toBeCloseTo(0.7 * 5_000 + 0.3 * 50_000);
  });

  it('a drift moves its median over the night, then stays', () => {
    const s = { kind: 'drift', fromMedianMs: 4_000, toMedianMs: 20_000, overMs: 10_000, sigma: 0.5 } as const;
    expect(driftMedianMs(s, 0)).toBe(4_000);
    expect(driftMedianMs(s, 5_000)).toBe(12_000);
    expect(driftMedianMs(s, 99_000)).toBe(20_000);
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
    expect(median(draws(s, 2001, 3, () => 0))).toBeLessThan(5_000);
    expect(median(draws(s, 2001, 3, () => 20_000))).toBeGreaterThan(16_000);
  });

  it('options: a shape per capability, a biased hint, and a bad shape refused', () => {
    const o = resolveSimOptions({
      keys: ['k'],
      resultOrigin: 'http://x.invalid',
      latency: { restore: { kind: 'uniform', minMs: 1, maxMs: 2 } },
      waitTimeHint: { noiseSigma: 0.3, bias: 0.5 },
    });
    expect(o.latency.restore).toEqual({ kind: 'uniform', minMs: 1, maxMs: 2 });
    expect(o.latency.upscale).toEqual({ medianMs: 20_000, sigma: 0.5 });
    expect(o.waitTimeBias).toBe(0.5);
    expect(() =>
      resolveSimOptions({ keys: ['k'], resultOrigin: 'http://x.invalid', latency: { kind: 'uniform', minMs: 5, maxMs: 1 } }),
    ).toThrow(/uniform/);
  });
});
