import { afterEach, describe, expect, it } from 'vitest';
import { installClock, VirtualClock } from '../../src/clock.js';
import { LiveProgress } from '../../src/progress/live.js';
import { buildProgress, type Progress } from '../../src/progress/snapshot.js';
import type { ProgressFacts } from '../../src/ledger/index.js';
import { foldSteps } from '../../src/ledger/read/status.js';
import { screenOf } from '../helpers/terminal.js';

const LIMITS = { callsPerMinute: 100, callsPerHour: 1000, activeTasks: 3 };

function picture(done: number, total: number, now: number): Progress {
  const pending = total - done;
  const byStep = [
    { step: 0, state: 'done', n: done },
    { step: 0, state: 'queued', n: pending },
  ].filter((r) => r.n > 0) as ProgressFacts['byStep'];
  const facts: ProgressFacts = {
    status: {
      total,
      done,
      failed: 0,
      skipped: 0,
      held: 0,
      pending,
      gone: 0,
      review: { accepted: 0, rejected: 0, unreviewed: done },
      states: {
        queued: pending,
        uploading: 0,
        uploaded: 0,
        submitting: 0,
        active: 0,
        succeeded: 0,
        downloading: 0,
        done,
        held: 0,
        failed: 0,
        skipped: 0,
        gone: 0,
      },
      calls: { total: done * 3, perKey: { k_test: { lastMinute: 5, lastHour: done * 3 } } },
      problems: [],
      steps: foldSteps(byStep, ['enhance']),
      paidNotDownloaded: 0,
      notDownloaded: [],
      metadataNotCarried: 0,
      metadataNotes: [],
    },
    byStep,
    slots: {},
    callsByKind: { upload: done, task: done * 2, account: 0 },
    recent: { sinceMs: 0, done, calls: done * 3, firstCallMs: now - 60_000 },
    latency: [],
    waitHints: [],
    stepCapabilities: [],
    failRetries: 0,
  };
  return buildProgress(facts, { now, steps: [{ capability: 'enhance' }], limits: LIMITS, keys: ['k_test'] });
}

let restore: (() => void) | undefined;
afterEach(() => restore?.());

describe('LiveProgress without a terminal (or --quiet)', () => {
  it('prints one summary line a minute, and none before the first minute', () => {
    const vc = new VirtualClock(Date.UTC(2026, 0, 1));
    restore = installClock(vc);
    const lines: string[] = [];
    let done = 0;
    const live = new LiveProgress({
      mode: 'lines',
      line: (s) => lines.push(s),
      color: false,
      title: 'jobs.yaml',
      read: () => picture(done, 10, vc.now()),
    });
    live.start();
    live.poke(); // activity draws nothing in this mode
    vc.advanceBy(59_000);
    expect(lines).toEqual([]);
    done = 4;
    vc.advanceBy(1_000);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^darkroom: 4\/10 done · tasks 0 · calls 5\/min 12\/h · .* photos\/min · ETA \S+.* · 0 failed · 0 held · 6 pending · elapsed 1m 00s$/,
    );
    done = 10;
    vc.advanceBy(60_000);
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatch(/^darkroom: 10\/10 done .*nothing left.* elapsed 2m 00s$/);
    live.log('darkroom: warning: something');
    expect(lines[2]).toBe('darkroom: warning: something');
    live.stop();
    vc.advanceBy(600_000);
    expect(lines).toHaveLength(3);
    expect(vc.pendingTimers()).toBe(0);
  });
});

describe('LiveProgress while the run is still finding photos', () => {
  it('says the discovery goes on and how many it found, on the line and in the rows, and stops saying it once it ended', () => {
    const vc = new VirtualClock(Date.UTC(2026, 0, 1));
    restore = installClock(vc);
    const lines: string[] = [];
    let found: number | null = 41_200;
    const read = () => ({ ...picture(3, found ?? 50_000, vc.now()), discovery: found === null ? null : { found } });
    const live = new LiveProgress({ mode: 'lines', line: (s) => lines.push(s), color: false, title: 'jobs.yaml', read });
    live.start();
    vc.advanceBy(60_000);
    expect(lines[0]).toMatch(/^darkroom: 3\/41200 done · finding photos… 41,200 so far · tasks 0/);
    found = null;
    vc.advanceBy(60_000);
    expect(lines[1]).toMatch(/^darkroom: 3\/50000 done · tasks 0/);
    expect(lines[1]).not.toContain('finding photos');
    live.stop();

    let written = '';
    found = 1_234_567;
    const stream = { isTTY: true, columns: 160, write: (s: string) => ((written += s), true) };
    const tty = new LiveProgress({ mode: 'tty', stream, line: () => undefined, color: false, title: 'jobs.yaml', read });
    tty.start();
    vc.advanceBy(1_000);
    tty.stop();
    expect(written).toContain('3/1234567 photos done · finding photos… 1,234,567 so far');
  });
});

describe('LiveProgress on a terminal', () => {
  it('draws rows in place with cli-progress (cursor moves, bar, figures), warnings above them, and restores the cursor', () => {
    const vc = new VirtualClock(Date.UTC(2026, 0, 1));
    restore = installClock(vc);
    let written = '';
    const stream = { isTTY: true, columns: 120, write: (s: string) => ((written += s), true) };
    let done = 3;
    const live = new LiveProgress({
      mode: 'tty',
      stream,
      line: () => undefined,
      color: false,
      title: 'jobs.yaml',
      read: () => picture(done, 12, vc.now()),
    });
    live.start();
    live.log('darkroom: warning: upload will be retried (item 3)');
    done = 12;
    vc.advanceBy(1_000);
    live.stop();
    expect(written).toContain('\x1b[?25l'); // cursor hidden while drawing
    expect(written).toContain('\x1b[?25h'); // and shown again
    expect(written).toMatch(/\x1b\[\d+A/); // rows redrawn in place
    expect(written).toContain('step 1 enhance');
    expect(written).toContain('█'.repeat(24)); // the full bar at the end
    expect(written).toContain('12/12');
    expect(written).toContain('k_test: tasks 0/3 · calls 5/100 this minute');
    expect(written).toContain('darkroom: warning: upload will be retried (item 3)');
    expect(written).not.toMatch(/\x1b\[3\dm/); // no colour was asked for
  });
});

describe('LiveProgress owns the terminal while it draws (issue 13)', () => {
  it('a long warning is wrapped to the width, every character kept, none cut', async () => {
    const vc = new VirtualClock(Date.UTC(2026, 0, 1));
    restore = installClock(vc);
    let written = '';
    const stream = { isTTY: true, columns: 40, write: (s: string) => ((written += s), true) };
    const live = new LiveProgress({
      mode: 'tty',
      stream,
      line: () => undefined,
      color: false,
      title: 'jobs.yaml',
      read: () => picture(3, 12, vc.now()),
    });
    live.start();
    const line =
      'darkroom: warning: archive/1950s/family album/a-very-long-scan-name-of-the-summer-of-1953.jpg: create held: outcome unknown (X-Request-Id dr-0123456789abcdef0123456789abcdef)';
    live.log(line);
    vc.advanceBy(1_000);
    live.stop();
    // As a terminal 40 columns wide shows it. cli-progress turns the terminal's own wrapping
    // off while it draws: a row wider than the terminal would be cut there.
    const rows = await screenOf(written, 40);
    for (const r of rows) expect(r.length).toBeLessThanOrEqual(39);
    const flat = rows.join('').replace(/\s+/g, '');
    expect(flat).toContain(line.replace(/\s+/g, ''));
    expect(rows.join('\n')).toContain('dr-0123456789abcdef0123456789abcdef');
  });

  it('the CLI screen sends lines through the display while it draws, and an interrupt stops it before its message', async () => {
    const { Screen } = await import('../../src/cli/screen.js');
    const vc = new VirtualClock(Date.UTC(2026, 0, 1));
    restore = installClock(vc);
    let written = '';
    const stream = { isTTY: true, columns: 100, write: (s: string) => ((written += s), true) };
    const screen = new Screen({ write: (s: string) => (written += s) });
    const live = new LiveProgress({
      mode: 'tty',
      stream,
      line: screen.line,
      color: false,
      title: 'jobs.yaml',
      read: () => picture(3, 12, vc.now()),
    });
    live.start();
    screen.attach(live);
    screen.line('darkroom: warning: photos/a.jpg: upload will be retried');
    // Not written straight (where the next frame would draw over it): queued above the rows.
    expect(written).not.toContain('upload will be retried');
    screen.stopThenLine('darkroom: SIGINT: no new calls');
    vc.advanceBy(5_000);
    live.stop();
    const at = written.lastIndexOf('darkroom: SIGINT: no new calls');
    expect(at).toBeGreaterThan(written.lastIndexOf('\x1b[?25h')); // cursor back first
    expect(written.slice(at)).not.toMatch(/\x1b\[\d*A/); // nothing drawn over it afterwards
    expect(written.slice(at)).toBe('darkroom: SIGINT: no new calls\n');
    // The queued warning was flushed above the last frame when the display stopped.
    expect(written.indexOf('upload will be retried')).toBeGreaterThan(-1);
    expect(written.indexOf('upload will be retried')).toBeLessThan(at);
    expect(live.active).toBe(false);
  });
});
