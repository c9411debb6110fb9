import { setTimeout as sleepReal } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { clock, installClock, VirtualClock } from '../../src/clock.js';

let restore: (() => void) | undefined;
afterEach(() => restore?.());

/** Real work that takes `ms` of wall-clock time. */
const slow = <T>(ms: number, value: T) => sleepReal(ms).then(() => value);

describe('VirtualClock and real I/O', () => {
  it('hands I/O results back in the order the work was started, whatever order it finishes in', async () => {
    const vc = new VirtualClock(0);
    restore = installClock(vc);
    const seen: string[] = [];
    let finished = 0;
    const worker = async (name: string, ms: number) => {
      seen.push(`${name}:${await clock.io(slow(ms, name))}@${clock.now()}`);
      await clock.sleep(1000);
      seen.push(`${name}:woke@${clock.now()}`);
      finished++;
    };
    // b finishes first in real time; its result must still come back after a's.
    void worker('a', 60);
    void worker('b', 5);
    await vc.run(() => finished === 2);
    expect(seen).toEqual(['a:a@0', 'b:b@0', 'a:woke@1000', 'b:woke@1000']);
  });

  it('keeps time still while held work runs, even across several pieces of I/O in it', async () => {
    const vc = new VirtualClock(0);
    restore = installClock(vc);
    let ticks = 0;
    clock.setTimer(() => ticks++, 1);
    let done = false;
    const composite = async () => {
      await clock.io(slow(5, 1));
      await clock.io(slow(5, 2)); // between the two, no I/O is pending: only `hold` keeps the clock still
      return ticks;
    };
    let ticksInside = -1;
    void clock.hold(composite()).then((t) => {
      ticksInside = t;
      done = true;
    });
    await vc.run(() => done);
    expect(ticksInside).toBe(0);
  });

  it('outside run(), hands results back as they come, in start order', async () => {
    const vc = new VirtualClock(0);
    restore = installClock(vc);
    const order: number[] = [];
    await Promise.all([clock.io(slow(30, 1)).then((v) => order.push(v)), clock.io(slow(1, 2)).then((v) => order.push(v))]);
    expect(order).toEqual([1, 2]);
  });
});
