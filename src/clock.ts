/**
 * The only module that reads time or schedules timers.
 *
 * Everything else calls `clock.now()`, `clock.sleep()` or `clock.setTimer()`, so that a
 * deterministic simulation can swap in a `VirtualClock` and run a night of work in
 * seconds, reproducibly. Libraries (undici, pino) keep their own timers; those are
 * I/O timeouts that never run inside the simulation.
 *
 * Over 300 lines on purpose: the system clock, the virtual one and the facade the code calls
 * are one file so that the lint rule "only src/clock.ts touches timers" (docs/ARCHITECTURE.md
 * § Import rules) names exactly one file.
 */

export interface TimerHandle {
  readonly id: number;
}

export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
  setTimer(fn: () => void, delayMs: number): TimerHandle;
  clearTimer(handle: TimerHandle): void;
  /**
   * Mark one piece of real I/O (a file read, an fsync, a call into sharp's thread pool) as
   * in progress. A virtual clock does not move while any is pending, and hands the results
   * back one at a time in the order the work was started, so a simulation stays
   * reproducible however long the disk takes and in whatever order it finishes. `work`
   * must not itself wait on other `io`: wrap work made of several pieces in `hold`.
   */
  io<T>(work: Promise<T>): Promise<T>;
  /** Keep a virtual clock still while `work` (which may do several `io`) runs. */
  hold<T>(work: Promise<T>): Promise<T>;
}

/** The machine's clock, shifted by `skewMs` if given (tests reach `--until` in seconds). */
export class SystemClock implements Clock {
  private readonly handles = new Map<number, ReturnType<typeof setTimeout>>();
  private nextId = 1;

  /**
   * `skewMs` shifts what `now()` says (timers still wait real time): the end-to-end tests
   * set it through DARKROOM_TEST_CLOCK_SKEW_MS to stand a few seconds before a wall-clock
   * moment (`--until 07:00`) instead of waiting hours for it.
   */
  constructor(private readonly skewMs = 0) {}

  now(): number {
    return Date.now() + this.skewMs;
  }

  setTimer(fn: () => void, delayMs: number): TimerHandle {
    const id = this.nextId++;
    const t = setTimeout(
      () => {
        this.handles.delete(id);
        fn();
      },
      Math.max(0, delayMs),
    );
    this.handles.set(id, t);
    return { id };
  }

  clearTimer(handle: TimerHandle): void {
    const t = this.handles.get(handle.id);
    if (t !== undefined) {
      clearTimeout(t);
      this.handles.delete(handle.id);
    }
  }

  io<T>(work: Promise<T>): Promise<T> {
    return work;
  }

  hold<T>(work: Promise<T>): Promise<T> {
    return work;
  }
}

interface VirtualTimer {
  id: number;
  at: number;
  seq: number;
  fn: () => void;
}

/**
 * A clock that only moves when told to. Timers fire in (time, creation order), so a run
 * driven by it is exactly reproducible.
 */
export class VirtualClock implements Clock {
  private current: number;
  private timers: VirtualTimer[] = [];
  private nextId = 1;
  private seq = 0;
  /** I/O started and not yet handed back, oldest first. */
  private readonly ioQueue: { done: boolean; deliver: () => void }[] = [];
  private held = 0;
  /** Inside run(): results are handed back by its loop, at quiet moments. */
  private driving = 0;

  constructor(startMs = Date.UTC(2026, 0, 1)) {
    this.current = startMs;
  }

  now(): number {
    return this.current;
  }

  setTimer(fn: () => void, delayMs: number): TimerHandle {
    const timer: VirtualTimer = {
      id: this.nextId++,
      at: this.current + Math.max(0, delayMs),
      seq: this.seq++,
      fn,
    };
    this.timers.push(timer);
    return { id: timer.id };
  }

  clearTimer(handle: TimerHandle): void {
    this.timers = this.timers.filter((t) => t.id !== handle.id);
  }

  io<T>(work: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const ticket = { done: false, deliver: () => {} };
      this.ioQueue.push(ticket);
      const finish = (deliver: () => void) => {
        ticket.done = true;
        ticket.deliver = deliver;
        if (this.driving === 0) this.deliverReady(Infinity);
      };
      work.then(
        (v) => finish(() => resolve(v)),
        (err: unknown) => finish(() => reject(err)),
      );
    });
  }

  hold<T>(work: Promise<T>): Promise<T> {
    this.held++;
    return work.finally(() => {
      this.held--;
    });
  }

  /** Hand back finished I/O, at most `max`, in the order it was started. */
  private deliverReady(max: number): void {
    for (let n = 0; n < max && this.ioQueue.length > 0 && this.ioQueue[0]!.done; n++) this.ioQueue.shift()!.deliver();
  }

  /** Time of the earliest pending timer, or undefined when none is pending. */
  nextTimerAt(): number | undefined {
    let min: number | undefined;
    for (const t of this.timers) if (min === undefined || t.at < min) min = t.at;
    return min;
  }

  pendingTimers(): number {
    return this.timers.length;
  }

  /** Move time forward to `at`, firing every timer due by then in order. */
  advanceTo(at: number): void {
    for (;;) {
      const next = this.popDue(at);
      if (!next) break;
      this.current = Math.max(this.current, next.at);
      next.fn();
    }
    this.current = Math.max(this.current, at);
  }

  advanceBy(ms: number): void {
    this.advanceTo(this.current + ms);
  }

  /**
   * Drive the process until `done()` holds: let all ready work (promises, I/O callbacks)
   * settle, then jump to the next timer. Throws if nothing is pending and not done, which
   * would otherwise hang a simulation forever.
   */
  async run(done: () => boolean, opts: { maxMs?: number } = {}): Promise<void> {
    const limit = opts.maxMs === undefined ? Infinity : this.current + opts.maxMs;
    this.driving++;
    try {
      while (!done()) {
        await settle();
        while (this.ioQueue.length > 0 || this.held > 0) {
          // One result at a time, each once what the last one set off has settled: the
          // disk and the thread pool finish in their own order, and it must not show.
          this.deliverReady(1);
          await settle();
        }
        if (done()) return;
        const next = this.nextTimerAt();
        if (next === undefined) {
          throw new Error('VirtualClock.run: no pending timers and not done (deadlock)');
        }
        if (next > limit) throw new Error(`VirtualClock.run: passed maxMs without finishing`);
        this.advanceTo(next);
      }
    } finally {
      this.driving--;
      if (this.driving === 0) this.deliverReady(Infinity);
    }
  }

  private popDue(at: number): VirtualTimer | undefined {
    let best = -1;
    for (let i = 0; i < this.timers.length; i++) {
      const t = this.timers[i]!;
      if (t.at > at) continue;
      const b = best >= 0 ? this.timers[best]! : undefined;
      if (!b || t.at < b.at || (t.at === b.at && t.seq < b.seq)) best = i;
    }
    if (best < 0) return undefined;
    return this.timers.splice(best, 1)[0];
  }
}

/** Let queued promise callbacks and ready I/O run before virtual time moves. */
function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

let installed: Clock = new SystemClock();

/** The process-wide clock. Methods delegate to whatever clock is installed. */
export const clock = {
  now(): number {
    return installed.now();
  },
  setTimer(fn: () => void, delayMs: number): TimerHandle {
    return installed.setTimer(fn, delayMs);
  },
  clearTimer(handle: TimerHandle): void {
    installed.clearTimer(handle);
  },
  io<T>(work: Promise<T>): Promise<T> {
    return installed.io(work);
  },
  hold<T>(work: Promise<T>): Promise<T> {
    return installed.hold(work);
  },
  /**
   * Direct (synchronous) file work, run as one turn of I/O: after the work already
   * queued, as a thread-pool call would finish, and waited for like `io`. Cheaper than
   * the several round trips of fs/promises for small files, without letting the work
   * jump ahead of events that it used to follow.
   */
  ioTurn<T>(fn: () => T): Promise<T> {
    const work = new Promise<T>((resolve, reject) =>
      setImmediate(() => {
        try {
          resolve(fn());
        } catch (err) {
          reject(err);
        }
      }),
    );
    return installed.io(work);
  },
  /**
   * Let the events waiting behind this code run (a read done, a timer due): one empty turn of
   * I/O, waited for like `io`. For a loop of synchronous work that must not starve the rest.
   */
  yieldTurn(): Promise<void> {
    return installed.io(new Promise<void>((resolve) => setImmediate(resolve)));
  },
  /** Resolves after `ms`; rejects with the signal's reason if aborted first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason ?? new Error('aborted'));
        return;
      }
      const c = installed;
      const onAbort = () => {
        c.clearTimer(handle);
        reject(signal?.reason ?? new Error('aborted'));
      };
      const handle = c.setTimer(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  },
  /**
   * An AbortSignal that aborts after `ms` on this clock; `clear()` cancels the timer.
   * With `also`, it aborts too when `also` does, first come first served, with that
   * signal's reason (at once if `also` is aborted already): AbortSignal.any([also,
   * deadline]) for ~1 µs instead of ~20 µs on Node 20, which adds up at one per API call
   * and download. `clear()` then also stops listening to `also`.
   */
  deadline(ms: number, also?: AbortSignal): { signal: AbortSignal; clear: () => void } {
    const ac = new AbortController();
    const c = installed;
    const handle = c.setTimer(() => ac.abort(new Error(`deadline of ${ms} ms passed`)), ms);
    if (!also) return { signal: ac.signal, clear: () => c.clearTimer(handle) };
    if (also.aborted) ac.abort(also.reason);
    const follow = () => ac.abort(also.reason);
    also.addEventListener('abort', follow, { once: true });
    return {
      signal: ac.signal,
      clear: () => {
        c.clearTimer(handle);
        also.removeEventListener('abort', follow);
      },
    };
  },
};

/** Install a clock (a VirtualClock in simulations); returns a function restoring the previous one. */
export function installClock(c: Clock): () => void {
  const previous = installed;
  installed = c;
  return () => {
    installed = previous;
  };
}
