import { clock, type TimerHandle } from '../../clock.js';

/** Sleep until a time on the clock or until someone calls notify(), whichever is first. */
export class Notifier {
  private waiters: (() => void)[] = [];

  notify(): void {
    const ws = this.waiters;
    this.waiters = [];
    for (const w of ws) w();
  }

  wait(untilMs: number): Promise<void> {
    return new Promise<void>((resolve) => {
      let handle: TimerHandle | undefined;
      const done = () => {
        if (handle) clock.clearTimer(handle);
        this.waiters = this.waiters.filter((w) => w !== done);
        resolve();
      };
      this.waiters.push(done);
      if (Number.isFinite(untilMs)) handle = clock.setTimer(done, Math.max(0, untilMs - clock.now()));
    });
  }
}
