import { describe, expect, it } from 'vitest';
import { RollingWindow } from '../../src/spec/window.js';

describe('RollingWindow', () => {
  it('allows at most `limit` calls in any span, and says exactly when the next fits', () => {
    const w = new RollingWindow(3, 1000);
    for (const t of [0, 100, 200]) w.record(t);
    expect(w.count(200)).toBe(3);
    expect(w.nextFreeAt(200)).toBe(1000); // the call at 0 leaves the window at 1000
    expect(w.nextFreeAt(1000)).toBe(1000);
    expect(w.count(1000)).toBe(2);
    w.record(1000);
    expect(w.nextFreeAt(1000)).toBe(1100);
  });

  it('admits up to the limit and frees a slot when the oldest call leaves', () => {
    const w = new RollingWindow(2, 1000);
    w.record(100);
    w.record(500);
    expect(w.admits(600)).toBe(false);
    expect(w.nextFreeAt(600)).toBe(1100);
    expect(w.admits(1099)).toBe(false);
    expect(w.admits(1100)).toBe(true);
    expect(w.remaining(1100)).toBe(1);
    expect(w.remaining(1500)).toBe(2);
  });
});
