import { describe, expect, it } from 'vitest';
import type { ProgressFacts, ItemState } from '../../src/ledger/index.js';
import { estimate, formatDuration } from '../../src/progress/model.js';
import stringWidth from 'string-width';
import { colorWanted, fit, frameRows, stripAnsi, summaryLine } from '../../src/progress/render.js';
import { foldSteps } from '../../src/ledger/read/status.js';
import { buildProgress } from '../../src/progress/snapshot.js';

const H = 3_600_000;
const MIN = 60_000;
const LIMITS = { callsPerMinute: 100, callsPerHour: 1000, activeTasks: 3 };

/** Facts as the ledger would give them; only what a test sets differs from an empty ledger. */
function facts(over: Partial<ProgressFacts> & { states?: Partial<Record<ItemState, number>> } = {}): ProgressFacts {
  const states = {
    queued: 0,
    uploading: 0,
    uploaded: 0,
    submitting: 0,
    active: 0,
    succeeded: 0,
    downloading: 0,
    done: 0,
    held: 0,
    failed: 0,
    skipped: 0,
    gone: 0,
    ...over.states,
  };
  // As the ledger counts them: skipped inputs (and gone ones) outside the total.
  const total = Object.values(states).reduce((a, b) => a + b, 0) - states.skipped - states.gone;
  const terminal = states.done + states.held + states.failed;
  return {
    byStep: [],
    slots: {},
    callsByKind: { upload: 0, task: 0, account: 0 },
    recent: { sinceMs: 0, done: 0, calls: 0, firstCallMs: null },
    latency: [],
    waitHints: [],
    stepCapabilities: [],
    failRetries: 0,
    ...over,
    status: { ...baseStatus(states, total, terminal, over.byStep ?? []), ...over.status },
  };
}

function baseStatus(
  states: Record<ItemState, number>,
  total: number,
  terminal: number,
  byStep: ProgressFacts['byStep'],
): ProgressFacts['status'] {
  return {
    total,
    done: states.done,
    failed: states.failed,
    skipped: states.skipped,
    held: states.held,
    pending: total - terminal,
    gone: 0,
    review: { accepted: 0, rejected: 0, unreviewed: states.done },
    states,
    calls: { total: 0, perKey: {} },
    problems: [],
    steps: foldSteps(byStep, []),
    paidNotDownloaded: 0,
    notDownloaded: [],
    metadataNotCarried: 0,
    metadataNotes: [],
  };
}

describe('estimate, the budget model (docs/ARCHITECTURE.md § Performance model)', () => {
  it('the hour window binds a long run: 30,000 calls on one key take (⌈30⌉ − 1) = 29 h', () => {
    const e = estimate({ keys: 1, limits: LIMITS, calls: 30_000, taskMs: 10_000 * 20_000 });
    expect(e.hourMs).toBe(29 * H);
    expect(e.minuteMs).toBe(300 * MIN);
    expect(e.slotsMs).toBeCloseTo((10_000 * 20_000) / 3, 6);
    expect(e.binds).toBe('hour');
    expect(e.ms).toBe(29 * H);
  });

  it('the slots bind a short run of slow tasks: 30 photos of 20 s on 3 slots take 200 s', () => {
    const e = estimate({ keys: 1, limits: LIMITS, calls: 90, taskMs: 30 * 20_000 });
    expect(e.hourMs).toBe(0);
    expect(e.minuteMs).toBeCloseTo(54_000, 6);
    expect(e.slotsMs).toBe(200_000);
    expect(e.binds).toBe('slots');
  });

  it("splits the work over keys, and counts the calls already in the busiest key's hour", () => {
    const e = estimate({ keys: 5, limits: LIMITS, calls: 5_000, taskMs: 0 });
    expect(e.callsPerKey).toBe(1000);
    expect(e.hourMs).toBe(0); // 1,000 calls fit one fresh hour
    const used = estimate({ keys: 5, limits: LIMITS, calls: 5_000, taskMs: 0, usedHour: [10, 400, 0] });
    expect(used.hourMs).toBe(H); // 1,000 + 400 → ⌈1.4⌉ − 1 = 1 h
  });

  it('formats durations for a progress line', () => {
    expect(formatDuration(12_400)).toBe('12s');
    expect(formatDuration(4 * MIN + 10_000)).toBe('4m 10s');
    expect(formatDuration(H + 5 * MIN)).toBe('1h 05m');
    expect(formatDuration(50 * H)).toBe('2d 02h');
  });
});

describe('buildProgress, the figures the display and status show', () => {
  it('counts per step, per key, and the ETA from the work left (hand-computed)', () => {
    // 2 steps, 10 photos: 2 done, 1 on step 2 running, 3 waiting for step 2, 1 running step 1,
    // 2 queued, 1 skipped. Key k_a has 2 slots in use and 30/200 calls in its windows.
    const f = facts({
      states: { done: 2, active: 2, uploaded: 3, queued: 2, skipped: 1 },
      byStep: [
        { step: 0, state: 'queued', n: 2 },
        { step: 0, state: 'active', n: 1 },
        { step: 0, state: 'skipped', n: 1 },
        { step: 1, state: 'uploaded', n: 3 },
        { step: 1, state: 'active', n: 1 },
        { step: 1, state: 'done', n: 2 },
      ],
      slots: { k_a: { active: 2, submitting: 0 } },
      callsByKind: { upload: 7, task: 30, account: 1 },
      recent: { sinceMs: 0, done: 2, calls: 38, firstCallMs: 1_000_000 - 4 * MIN },
      latency: [{ capability: 'restore', tasks: 6, meanMs: 10_000 }],
    });
    const withCalls = { ...f, status: { ...f.status, calls: { total: 38, perKey: { k_a: { lastMinute: 30, lastHour: 200 } } } } };
    const p = buildProgress(withCalls, {
      now: 1_000_000,
      steps: [{ capability: 'restore' }, { capability: 'upscale' }],
      limits: LIMITS,
      keys: ['k_a'],
    });
    expect(p.total).toBe(9); // the skipped input is outside the total
    expect(p.steps).toEqual([
      { index: 0, capability: 'restore', done: 6, total: 9, running: 1 },
      { index: 1, capability: 'upscale', done: 2, total: 9, running: 1 },
    ]);
    expect(p.keys).toEqual([{ key: 'k_a', tasks: 2, lastMinute: 30, lastHour: 200, guessed: null, use: null }]);
    // 2 photos in the last 4 minutes → 0.5 a minute; 38 calls → 9.5 a minute
    expect(p.throughput.photosPerMinute).toBeCloseTo(0.5, 9);
    expect(p.throughput.callsPerMinute).toBeCloseTo(9.5, 9);
    // 8 steps done (6 + 2), 2 running count half: 30 task calls / 9 = 3.33 per step
    expect(p.callsPerStep).toBeCloseTo(30 / 9, 9);
    // Work left: queued 2 × (upload + 2 steps), step-1 active 0.5 + 1, step-2 uploaded 3, step-2 active 0.5
    // uploads 2; steps 2·2 + 1.5 + 3 + 0.5 = 9 → calls 2 + 9 × 3.33 = 32
    expect(p.eta!.remainingCalls).toBe(32);
    // task time: step 1 (restore, 10 s measured): 2 + 0.5 = 2.5; step 2 (upscale, not measured → 20 s): 2 + 1 + 3 + 0.5 = 6.5
    // slots: (2.5 · 10 s + 6.5 · 20 s) / 3 = 51.67 s; minute: 32 / 100 min = 19.2 s; hour: 0
    expect(p.eta!.slotsMs).toBeCloseTo((2.5 * 10_000 + 6.5 * 20_000) / 3, 6);
    expect(p.eta!.binds).toBe('slots');
    expect(p.eta!.basis).toBe('assumed'); // upscale's latency is not known yet
  });

  it('slots counted busy by held creates or a stopped run: shown per key until when, and the ETA counts them', () => {
    const f = facts({
      states: { uploaded: 3 },
      byStep: [{ step: 0, state: 'uploaded', n: 3 }],
      latency: [{ capability: 'restore', tasks: 6, meanMs: 10_000 }],
    });
    const now = 1_000_000;
    const ctx = { now, steps: [{ capability: 'restore' }], limits: LIMITS, keys: ['k_a'] };
    const plain = buildProgress(f, ctx);
    const guessed = { held: 2, deadRun: 1, deadTasks: 0, untilMs: now + 5 * MIN };
    const p = buildProgress(f, { ...ctx, guessedSlots: { k_a: guessed } });
    expect(p.keys[0]!.guessed).toEqual(guessed);
    // 3 tasks of 10 s, and 3 slots busy for at most 5 more minutes: (30 s + 3 · 5 min) / 3
    expect(plain.eta!.slotsMs).toBeCloseTo(10_000, 6);
    expect(p.eta!.slotsMs).toBeCloseTo((30_000 + 3 * 5 * MIN) / 3, 6);
    expect(summaryLine(p, 0)).toContain('3 slots counted busy (held creates, a run that stopped) until ');
    // Drawn by the run, which holds the ledger: no command its lock would refuse.
    expect(summaryLine(p, 0)).toContain('at most; the run asks the service before then');
    // Past their time they are not shown, nor counted.
    expect(buildProgress(f, { ...ctx, now: now + 6 * MIN, guessedSlots: { k_a: guessed } }).keys[0]!.guessed).toBeNull();
  });

  it('says nothing is left when every photo is terminal', () => {
    const p = buildProgress(facts({ states: { done: 3 }, byStep: [{ step: 0, state: 'done', n: 3 }] }), { now: 0, limits: LIMITS });
    expect(p.pending).toBe(0);
    expect(p.eta!.ms).toBe(0);
    expect(summaryLine(p, 65_000)).toMatch(/^darkroom: 3\/3 done · .*nothing left.*elapsed 1m 05s$/);
  });
});

describe('rendering', () => {
  const p = buildProgress(
    facts({
      states: { done: 1, active: 1, held: 1 },
      byStep: [
        { step: 0, state: 'done', n: 1 },
        { step: 0, state: 'active', n: 1 },
        { step: 0, state: 'held', n: 1 },
      ],
      slots: { k_a: { active: 1, submitting: 0 } },
    }),
    { now: 0, steps: [{ capability: 'enhance' }], limits: LIMITS, keys: ['k_a'] },
  );

  it('honours NO_COLOR (present and not empty) and never colours a non-terminal', () => {
    expect(colorWanted({}, true)).toBe(true);
    expect(colorWanted({ NO_COLOR: '1' }, true)).toBe(false);
    expect(colorWanted({ NO_COLOR: '' }, true)).toBe(true);
    expect(colorWanted({ TERM: 'dumb' }, true)).toBe(false);
    expect(colorWanted({}, false)).toBe(false);
    const plain = frameRows(p, { color: false, width: 120, title: 'jobs.yaml', elapsedMs: 0, bar: () => '##--' });
    expect(plain.map((r) => r.text).join('\n')).not.toMatch(/\x1b/);
    const coloured = frameRows(p, { color: true, width: 120, title: 'jobs.yaml', elapsedMs: 0, bar: () => '##--' });
    expect(coloured.map((r) => r.text).join('\n')).toMatch(/\x1b\[32m/);
  });

  it('draws one row per step and key, then rate, ETA and problems', () => {
    const rows = frameRows(p, { color: false, width: 200, title: 'jobs.yaml', elapsedMs: 0, bar: () => '##--' });
    expect(rows.map((r) => r.id)).toEqual(['title', 'step0', 'key:k_a', 'rate', 'eta', 'problems']);
    expect(rows[1]!.text).toMatch(/^step 1 enhance +##-- 1\/3 · 1 running$/);
    expect(rows[2]!.text).toContain('k_a: tasks 1/3 · calls 0/100 this minute · 0/1000 this hour');
    expect(rows[5]!.text).toMatch(/0 failed · 1 held/);
  });

  it('cuts lines to the terminal width without breaking colour codes', () => {
    const s = `\x1b[32m${'x'.repeat(50)}\x1b[39m tail`;
    const cut = fit(s, 21);
    expect(stripAnsi(cut)).toHaveLength(20);
    expect(stripAnsi(cut).endsWith('…')).toBe(true);
    expect(cut.endsWith('\x1b[0m')).toBe(true);
    expect(fit('short', 80)).toBe('short');
  });

  it('fits every row of an 80-column terminal, a long problem and wide characters included', () => {
    const names = [
      'a-rather-long-archive-file-name-from-the-scanner-roll-7.jpg',
      '写真アルバム1955年の夏の家族旅行のスキャン写真アルバム1955年の夏の家族旅行.jpg',
    ];
    for (const name of names) {
      const q = {
        ...p,
        failed: 1,
        problems: [
          {
            id: 1,
            path: name,
            state: 'failed' as const,
            step: 0,
            reason: 'step 1: enhance ended FAIL on all 3 attempts (last task 00000400c28e59938288a0bd)',
            sentRequestId: null,
            requestId: null,
            taskId: null,
          },
        ],
      };
      for (const color of [false, true]) {
        const rows = frameRows(q, { color, width: 80, title: `${name}.yaml`, elapsedMs: 0, bar: () => '##--' });
        for (const r of rows) expect(stringWidth(r.text), r.text).toBeLessThanOrEqual(79);
        expect(stripAnsi(rows.at(-1)!.text)).toMatch(/^problems +1 failed · 1 held · e\.g\. .*…$/);
      }
    }
    // Cut between two wide characters: the row is one column short rather than one too long.
    expect(stringWidth(fit('写'.repeat(60), 80))).toBeLessThanOrEqual(79);
  });
});
