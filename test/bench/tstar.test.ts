import { describe, expect, it } from 'vitest';
import { attempts, lognormalMean, tStar } from '../../bench/tstar.js';

const H = 3_600_000;
const MIN = 60_000;
// Hand-computed: e^{0.5²/2} = e^0.125 ≈ 1.133148; 1/0.98 ≈ 1.020408; 1/0.99 ≈ 1.010101.

describe('tStar, the shortest possible run of a workload', () => {
  it('W1 (10,000 photos, 1 key, enhance 20 s σ0.5, 2% FAIL): the hour window binds at 30 h', () => {
    const t = tStar({ photos: 10_000, keys: 1, uploads: true, steps: [{ medianMs: 20_000, sigma: 0.5, failRate: 0.02 }] });
    // C* = 10,000 · (1 + 2 · 1.020408) = 30,408.16 calls → ⌈30.41⌉ − 1 = 30 h
    expect(t.calls).toBeCloseTo(30_408.16, 1);
    expect(t.hourMs).toBe(30 * H);
    expect(t.minuteMs / MIN).toBeCloseTo(304.08, 2);
    // 10,000 · 1.020408 · 20 s · 1.133148 / 3 = 77,085 s = 21.41 h
    expect(t.slotsMs / H).toBeCloseTo(21.41, 2);
    expect(t.binds).toBe('hour');
    expect(t.ms).toBe(30 * H);
  });

  it('W2 (2,000 photos, three steps of 40 s σ0.5, 1% FAIL): the slots bind at 25.4 h', () => {
    const step = { medianMs: 40_000, sigma: 0.5, failRate: 0.01 };
    const t = tStar({ photos: 2_000, keys: 1, uploads: true, steps: [step, step, step] });
    // C* = 2,000 · (1 + 3 · 2 · 1.010101) = 14,121.2 → 14 h
    expect(t.calls).toBeCloseTo(14_121.21, 1);
    expect(t.hourMs).toBe(14 * H);
    // 2,000 · 3 · 1.010101 · 40 s · 1.133148 / 3 = 91,568 s = 25.44 h
    expect(t.slotsMs / H).toBeCloseTo(25.435, 2);
    expect(t.binds).toBe('slots');
  });

  it('W3 (300 photos, 5 s, all SUCCESS): the slots bind at 9.44 min, the hour window not at all', () => {
    const t = tStar({ photos: 300, keys: 1, uploads: true, steps: [{ medianMs: 5_000, sigma: 0.5, failRate: 0 }] });
    expect(t.calls).toBe(900);
    expect(t.hourMs).toBe(0); // 900 calls fit in the first hour
    expect(t.minuteMs).toBe(9 * MIN);
    // 300 · 5 s · 1.133148 / 3 = 566.6 s
    expect(t.slotsMs / 1000).toBeCloseTo(566.57, 1);
    expect(t.binds).toBe('slots');
  });

  it('W4 (10,000 photos over 5 keys): each key carries 2,000 and the hour window binds at 6 h', () => {
    const t = tStar({ photos: 10_000, keys: 5, uploads: true, steps: [{ medianMs: 20_000, sigma: 0.5, failRate: 0.02 }] });
    expect(t.photosPerKey).toBe(2_000);
    expect(t.calls).toBeCloseTo(6_081.63, 1);
    expect(t.hourMs).toBe(6 * H);
    expect(t.slotsMs / H).toBeCloseTo(4.2825, 3);
    expect(t.ms).toBe(6 * H);
  });

  it('counts no upload for URL inputs, and the busiest key sets the bound when photos do not split evenly', () => {
    const t = tStar({ photos: 7, keys: 2, uploads: false, steps: [{ medianMs: 1_000, sigma: 0, failRate: 0 }] });
    expect(t.photosPerKey).toBe(4);
    expect(t.calls).toBe(8);
    expect(t.slotsMs).toBeCloseTo(4_000 / 3, 6);
  });

  it('helpers: attempts and the lognormal mean', () => {
    expect(attempts(0)).toBe(1);
    expect(attempts(0.5)).toBe(2);
    expect(() => attempts(1)).toThrow(RangeError);
    expect(lognormalMean(20_000, 0.5)).toBeCloseTo(22_662.97, 1);
    expect(lognormalMean(1_000, 0)).toBe(1_000);
  });
});
