import { createHash } from 'node:crypto';
import { appendFileSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { afterEach, describe, expect, it } from 'vitest';
import { VirtualClock } from '../../src/clock.js';
import type { WatchHints } from '../../src/inputs/follow/watch.js';
import type { RunEvent } from '../../src/run/events.js';
import type { GuardLimits } from '../../src/run/guards.js';
import { makeJob, type TestJob } from '../helpers/job.js';
import { simulate, VIRTUAL_START_MS } from '../helpers/simulate.js';

/*
 * `run --follow` under the virtual clock: the scanner's writes happen at moments of the clock
 * (its timers), and the watcher is a stand-in told of each write as the real one would tell of
 * it (test/inputs/follow.watch.test.ts shows it does); the settler, the recording, the lanes
 * and the simulated service are the real ones.
 */

const cleanups: (() => void)[] = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

/** A stand-in watcher: the hints the follower gave it, for the test's writes to use. */
function fakeWatch() {
  const box: { hints?: WatchHints } = {};
  const watchFolder = (_dir: string, _o: unknown, hints: WatchHints) => {
    box.hints = hints;
    return { ready: Promise.resolve(), close: async () => {} };
  };
  return { box, watchFolder };
}

/** A PNG of noise, large enough to be written in several chunks. */
async function scan(seed: number, width = 160, height = 120): Promise<Buffer> {
  const raw = Buffer.alloc(width * height * 3);
  let x = seed * 2654435761;
  for (let i = 0; i < raw.length; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    raw[i] = x >>> 24;
  }
  return sharp(raw, { raw: { width, height, channels: 3 } })
    .png()
    .toBuffer();
}

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

async function emptyJob(extra: Record<string, unknown> = {}): Promise<TestJob> {
  const job = await makeJob({ photos: 0, steps: [{ capability: 'enhance' }], extra: { input: { dir: './photos', ...extra } } });
  cleanups.push(job.cleanup);
  return job;
}

/** One followed run: `script` schedules the writes on the clock; the run is interrupted at `endMs` after its start. */
async function follow(
  job: TestJob,
  script: (at: (ms: number, fn: () => void) => void, hints: () => WatchHints) => void,
  endMs: number,
  guards?: GuardLimits,
) {
  const vc = new VirtualClock(VIRTUAL_START_MS);
  const { box, watchFolder } = fakeWatch();
  const ac = new AbortController();
  const events: RunEvent[] = [];
  const at = (ms: number, fn: () => void) => vc.setTimer(fn, ms);
  script(at, () => box.hints!);
  at(endMs, () => ac.abort(new Error('test over')));
  const r = await simulate({
    job,
    clock: vc,
    signal: ac.signal,
    onEvent: (e) => events.push(e),
    runOptions: { follow: true, watchFolder: watchFolder as never, guards },
  });
  return { ...r, events };
}

describe('run --follow under the virtual clock', () => {
  it('takes a file written in chunks over 30 s once, after it is whole, and its output is the whole file’s', async () => {
    const job = await emptyJob();
    const whole = await scan(1);
    const file = path.join(job.inputDir, 'scan-0001.png');
    const chunks = 6;
    const step = Math.ceil(whole.length / chunks);
    const r = await follow(
      job,
      (at, hints) => {
        // A scanner: a chunk every 5 s from t = 5 s, the last at t = 30 s.
        for (let c = 0; c < chunks; c++) {
          at(5_000 * (c + 1), () => {
            appendFileSync(file, whole.subarray(c * step, (c + 1) * step));
            hints().file('scan-0001.png');
          });
        }
      },
      5 * 60_000,
    );
    expect(r.result.exitCode).toBe(130);
    expect(r.result.status).toMatchObject({ total: 1, done: 1, pending: 0 });
    expect(Object.values(r.audit.createsPerSource)).toEqual([1]);
    const found = r.events.filter((e) => e.type === 'found');
    expect(found).toHaveLength(1);
    // Taken only once whole: after the last chunk (t = 30 s) and input.settle (10 s).
    expect(found[0]!.atMs - r.startMs).toBeGreaterThanOrEqual(40_000);
    const item = r.ledger.items.all()[0]!;
    expect(item.content_hash).toBe(sha(whole));
    // Its output is what a run of the whole file gives.
    const plain = await makeJob({ photos: 0, steps: [{ capability: 'enhance' }] });
    cleanups.push(plain.cleanup);
    writeFileSync(path.join(plain.inputDir, 'scan-0001.png'), whole);
    const p = await simulate({ job: plain });
    expect(p.result.status.done).toBe(1);
    const out = (j: TestJob) =>
      readFileSync(
        path.join(
          j.outputDir,
          readdirSync(j.outputDir).find((f) => f.startsWith('scan-0001'))!,
        ),
      );
    expect(sha(out(job))).toBe(sha(out(plain)));
  });

  it('takes a file copied in under a temporary name and renamed once, and never uploads one deleted while settling', async () => {
    const job = await emptyJob();
    const a = await scan(2);
    const b = await scan(3);
    const r = await follow(
      job,
      (at, hints) => {
        // A copy under a name the job does not take, then its rename.
        at(2_000, () => {
          writeFileSync(path.join(job.inputDir, '.copying-0002.png.part'), a.subarray(0, 1000));
          hints().file('.copying-0002.png.part');
        });
        at(4_000, () => {
          appendFileSync(path.join(job.inputDir, '.copying-0002.png.part'), a.subarray(1000));
          renameSync(path.join(job.inputDir, '.copying-0002.png.part'), path.join(job.inputDir, 'scan-0002.png'));
          hints().file('.copying-0002.png.part');
          hints().file('scan-0002.png');
        });
        // A copy under a name the job takes, renamed before it settled: the first name is gone.
        at(6_000, () => {
          writeFileSync(path.join(job.inputDir, 'tmp-0003.png'), b);
          hints().file('tmp-0003.png');
        });
        at(9_000, () => {
          renameSync(path.join(job.inputDir, 'tmp-0003.png'), path.join(job.inputDir, 'scan-0003.png'));
          hints().file('tmp-0003.png');
          hints().file('scan-0003.png');
        });
        // Deleted while settling.
        at(10_000, () => {
          writeFileSync(path.join(job.inputDir, 'mistake.png'), a.subarray(0, 5000));
          hints().file('mistake.png');
        });
        at(15_000, () => {
          rmSync(path.join(job.inputDir, 'mistake.png'));
          hints().file('mistake.png');
        });
      },
      3 * 60_000,
    );
    expect(r.result.status).toMatchObject({ total: 2, done: 2, pending: 0 });
    expect(Object.values(r.audit.createsPerSource)).toEqual([1, 1]);
    expect(Object.values(r.audit.keys)[0]!.uploads).toBe(2);
    for (const name of ['scan-0002.png', 'scan-0003.png']) expect(r.ledger.inputs.hasFile(name)).toBe(true);
    expect(r.ledger.inputs.hasFile('mistake.png')).toBe(false);
    expect(r.events.filter((e) => e.type === 'found').map((e) => (e as { input: string }).input)).toEqual([
      'scan-0002.png',
      'scan-0003.png',
    ]);
  });

  it('is ended by --max-photos once its photos are done (exit 4), not by an idle folder', async () => {
    const job = await emptyJob();
    const pngs = [await scan(11), await scan(12), await scan(13)];
    const put = (hints: WatchHints, n: number) => {
      writeFileSync(path.join(job.inputDir, `scan-000${n}.png`), pngs[n - 1]!);
      hints.file(`scan-000${n}.png`);
    };
    const r = await follow(
      job,
      (at, hints) => {
        at(5_000, () => [1, 2].forEach((n) => put(hints(), n)));
        // Past the cap: never created (the run has ended by then).
        at(20 * 60_000, () => put(hints(), 3));
      },
      60 * 60_000,
      { maxPhotos: 2 },
    );
    expect(r.result.exitCode).toBe(4);
    expect(r.result.status).toMatchObject({ done: 2, pending: 0 });
    expect(Object.values(r.audit.createsPerSource)).toEqual([1, 1]);
  });

  // 2,000 in `npm run test:follow-burst` (about 80 s here); a shorter burst inside `npm test`.
  const BURST = Number(process.env.DARKROOM_FOLLOW_BURST ?? 250);

  it(`does all of ${BURST} files dropped in at once, one create each, within the key’s limits`, async () => {
    const job = await emptyJob({ settle: 5 });
    const names: string[] = [];
    mkdirSync(path.join(job.inputDir, 'card'), { recursive: true });
    // Tiny distinct PNGs (1×1, a colour each): their bytes differ, so each is a photo.
    const pngs = await Promise.all(
      Array.from({ length: BURST }, (_, i) =>
        sharp({ create: { width: 1, height: 1, channels: 3, background: { r: i & 255, g: (i >> 8) & 255, b: 7 } } })
          .png()
          .toBuffer(),
      ),
    );
    const r = await follow(
      job,
      (at, hints) => {
        at(1_000, () => {
          pngs.forEach((png, i) => {
            const rel = `card/IMG_${String(i).padStart(4, '0')}.png`;
            writeFileSync(path.join(job.inputDir, rel), png);
            names.push(rel);
          });
          // The card's folder appeared: its files were there before any watch on it.
          hints().folder('card');
        });
      },
      (BURST / 250 + 1) * 3_600_000,
    );
    expect(r.result.status).toMatchObject({ total: BURST, done: BURST, pending: 0, failed: 0, held: 0 });
    const creates = Object.values(r.audit.createsPerSource);
    expect(creates).toHaveLength(BURST);
    expect(creates.every((n) => n === 1)).toBe(true);
    const k = Object.values(r.audit.keys)[0]!;
    expect(k.maxCallsInAnyMinute).toBeLessThanOrEqual(100);
    expect(k.maxCallsInAnyHour).toBeLessThanOrEqual(1000);
    expect(k.maxActiveTasks).toBeLessThanOrEqual(3);
    expect(r.events.filter((e) => e.type === 'found')).toHaveLength(BURST);
  }, 300_000);
});
