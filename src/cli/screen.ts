import type { Display } from './commands/run.js';
import { terminalSafe } from '../display.js';

/** What the screen writes to: process.stderr in the CLI, a fake in tests. */
export interface LineSink {
  write(s: string): unknown;
}

/**
 * The CLI's stderr. While a live display draws, every line goes through it, so nothing
 * written from anywhere (warnings, the Ctrl-C notice, a lock note) lands in the middle of
 * its rows; otherwise straight to the stream. An interrupt or an exit first stops the
 * display, so the cursor is back and the message stays below the last frame.
 */
export class Screen {
  private display: Display | undefined;

  constructor(private readonly sink: LineSink) {}

  /** One line (a trailing newline is added when missing); nothing in it acts on the terminal (terminalSafe). */
  readonly line = (text: string): void => {
    const s = terminalSafe(text);
    const d = this.display;
    if (d?.active) d.log(s.replace(/\n$/, ''));
    else this.sink.write(s.endsWith('\n') ? s : `${s}\n`);
  };

  /** The display now drawing; the returned function lets go of it. */
  attach(d: Display): () => void {
    this.display = d;
    return () => {
      if (this.display === d) this.display = undefined;
    };
  }

  /** Stop the display (if one draws), then print the line below it: for Ctrl-C and exits. */
  stopThenLine(s: string): void {
    this.release();
    this.line(s);
  }

  /** Stop the display, if one draws: before the process exits, so the terminal is left whole. */
  readonly release = (): void => {
    const d = this.display;
    this.display = undefined;
    if (d?.active) d.stop();
  };
}
