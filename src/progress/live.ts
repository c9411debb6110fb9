import { terminalSafe } from '../display.js';
import cliProgress from 'cli-progress';
import { clock, type TimerHandle } from '../clock.js';
import { frameRows, summaryLine, wrapLine } from './render.js';
import type { Progress } from './snapshot.js';

/** Where the live display draws: a terminal, or anything that says it is one (DARKROOM_FORCE_TTY). */
export interface TtyStream {
  write(s: string): boolean;
  readonly isTTY?: boolean;
  readonly columns?: number;
}

export interface LiveProgressOptions {
  /** 'tty': redrawn rows (cli-progress); 'lines': one summary line a minute. */
  readonly mode: 'tty' | 'lines';
  /** The terminal, in 'tty' mode (given by the CLI: this module never reaches for process.stderr). Without it, 'lines'. */
  readonly stream?: TtyStream;
  /** Where summary lines and human log lines go in 'lines' mode (stderr). */
  readonly line: (s: string) => void;
  readonly color: boolean;
  /** Shown in the first row: the jobs file. */
  readonly title: string;
  /** A fresh picture from the ledger. Throwing skips that frame. */
  readonly read: () => Progress;
  /** Default 60 s. */
  readonly lineEveryMs?: number;
  /** Redraw at least this often in 'tty' mode, activity or not; default 1 s. */
  readonly refreshMs?: number;
  /** Activity redraws no more often than this; default 250 ms. */
  readonly minGapMs?: number;
}

/** ECMA-48 EL: erase from the cursor to the end of the line. */
const ERASE_TO_END = '\x1b[K';

const BAR = { barsize: 24, barCompleteString: '█'.repeat(25), barIncompleteString: '░'.repeat(25), barGlue: '' };
const drawBar = (fraction: number) => cliProgress.Format.BarFormat(Math.min(1, Math.max(0, fraction)), BAR as never);

/**
 * The live view of a run. On a terminal, one row per step, per key, then rates, ETA and
 * problems, redrawn in place by cli-progress's MultiBar (its own 2 fps timer does the
 * drawing; ours decides when to re-read the ledger). Elsewhere, a summary line a minute.
 * While the rows are drawn the display owns the terminal: every line written meanwhile
 * must come through `log` (the CLI's stderr does: src/cli/screen.ts), printed above the
 * rows and wrapped to the width (cli-progress turns the terminal's own wrapping off while
 * it draws, which would cut a long line, request ids and all).
 *
 * It hooks no process event: a CLI that exits while the rows are drawn calls stop() first
 * (src/cli/screen.ts), which gives the cursor and line wrapping back.
 */
export class LiveProgress {
  private readonly startedMs = clock.now();
  private multibar: cliProgress.MultiBar | undefined;
  /** The rows on screen, top to bottom: the frame's n-th row is drawn by the n-th. */
  private readonly bars: cliProgress.SingleBar[] = [];
  private timer: TimerHandle | undefined;
  private lastRead = -Infinity;
  private photos = 0;
  private stopped = false;
  private stopping = false;

  constructor(private readonly o: LiveProgressOptions) {}

  start(): void {
    if (this.o.mode === 'tty' && this.o.stream) {
      const stream = this.o.stream;
      this.multibar = new cliProgress.MultiBar({
        stream: stream as NodeJS.WritableStream,
        fps: 2,
        hideCursor: true,
        linewrap: false,
        // Every row drawn whole at every frame, changed or not: a line logged above the rows
        // moves them down, and a row left as it was would keep what was there before.
        forceRedraw: true,
        clearOnComplete: false,
        stopOnComplete: false,
        gracefulExit: false,
        format: (_opts, _params, payload: { text?: string }) => payload.text ?? '',
      });
      this.refresh();
      this.arm(this.o.refreshMs ?? 1000);
    } else {
      this.arm(this.o.lineEveryMs ?? 60_000);
    }
  }

  /** The run did something: redraw soon (at most every 250 ms, less often on a big ledger), in 'tty' mode. */
  poke(): void {
    if (!this.multibar || this.stopped) return;
    if (clock.now() - this.lastRead < this.gapMs()) return;
    this.refresh();
  }

  /**
   * A read of the ledger costs ~1 ms for a few hundred photos and ~80 ms for 100,000 (the
   * state and step counts scan the items; measured on the bench's ledger): reads are spaced
   * 20 ms per 1,000 photos, at least 250 ms, so the display takes at most ~4% of the run.
   * Sized by the photo count rather than by timing the reads: time is read only through
   * the clock, and a virtual one does not move during a read.
   */
  private gapMs(): number {
    return Math.max(this.o.minGapMs ?? 250, (this.photos / 1000) * 20);
  }

  /** True while the rows are drawn: then every line for the terminal must go through log(). */
  get active(): boolean {
    return this.multibar !== undefined && !this.stopped;
  }

  /**
   * A human line (a warning during the run), printed whole above the display: wrapped, never
   * cut, each of its rows cleared to its end (it is written over the rows of the last frame).
   */
  log(line: string): void {
    const safe = terminalSafe(line);
    if (this.active) this.multibar!.log(`${wrapLine(safe, this.o.stream?.columns || 100).join(`${ERASE_TO_END}\n`)}${ERASE_TO_END}\n`);
    else this.o.line(safe);
  }

  /** Draw the last picture and leave it on screen. */
  stop(): void {
    if (this.stopped) return;
    if (this.timer) clock.clearTimer(this.timer);
    if (this.multibar) {
      this.stopping = true;
      this.refresh();
      this.stopped = true;
      // Flushes the lines logged since the last frame, then the last frame stays on screen
      // with the cursor and the terminal's line wrapping given back.
      this.multibar.update();
      this.multibar.stop();
    }
    this.stopped = true;
  }

  private arm(everyMs: number): void {
    this.timer = clock.setTimer(() => {
      if (this.stopped) return;
      if (this.multibar) {
        if (clock.now() - this.lastRead >= this.gapMs()) this.refresh();
      } else this.printLine();
      this.arm(everyMs);
    }, everyMs);
  }

  private printLine(): void {
    try {
      this.o.line(summaryLine(this.o.read(), clock.now() - this.startedMs));
    } catch {
      // The ledger was busy for longer than its timeout: the next minute's line will do.
    }
  }

  private refresh(): void {
    const mb = this.multibar;
    if (!mb || this.stopped) return;
    this.lastRead = clock.now();
    let p: Progress;
    try {
      p = this.o.read();
    } catch {
      return;
    }
    this.photos = p.total;
    // Before discovery has filled the ledger there is nothing to show.
    if (p.total === 0 && !this.stopping) return;
    const width = this.o.stream?.columns || 100;
    const rows = frameRows(p, { color: this.o.color, width, title: this.o.title, elapsedMs: clock.now() - this.startedMs, bar: drawBar });
    // By position: a row that comes or goes (the outage's, a wait's) moves the ones below it,
    // and rows the frame no longer has leave the screen (remove clears below the last one).
    rows.forEach((r, i) => {
      const bar = this.bars[i];
      if (bar) bar.update(r.fraction ?? 0, { text: r.text });
      else this.bars.push(mb.create(1, r.fraction ?? 0, { text: r.text }));
    });
    while (this.bars.length > rows.length) mb.remove(this.bars.pop()!);
  }
}
