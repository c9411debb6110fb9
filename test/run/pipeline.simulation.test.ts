import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { filesUnder, makeJob, writePhoto } from '../helpers/job.js';
import { simSession, simulate, type SimSession } from '../helpers/simulate.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

const THREE = [{ capability: 'restore' }, { capability: 'colorize' }, { capability: 'upscale', resolution: '4K' }];

async function photos(dir: string, n: number): Promise<string[]> {
  const names: string[] = [];
  for (let i = 0; i < n; i++) {
    const rel = i % 2 === 0 ? `box ${i % 3}/scan-${i}.jpg` : `scan-${i}.png`;
    await writePhoto(path.join(dir, rel), i, rel.endsWith('.png') ? 'png' : 'jpeg');
    names.push(rel);
  }
  return names;
}

type Attempt = { item_id: number; step_index: number; status: string; id: number };
function attempts(s: SimSession): Attempt[] {
  const db = (s.ledger as unknown as { db: import('better-sqlite3').Database }).db;
  return db.prepare('SELECT id, item_id, step_index, status FROM attempts ORDER BY id').all() as Attempt[];
}

describe('a multi-step pipeline', () => {
  it("passes each step's result URL to the next: one upload a photo, no intermediate downloaded, the last result is the output", async () => {
    const job = await makeJob({ photos: 0, steps: THREE });
    cleanups.push(job.cleanup);
    const names = await photos(job.inputDir, 10);
    const s = simSession({ job, sim: { seed: 7, latency: { medianMs: 15_000, sigma: 0.4 } } });
    const r = (await simulate(s)).result;
    expect(r.exitCode).toBe(0);
    expect(r.status).toMatchObject({ total: 10, done: 10, failed: 0, held: 0, pending: 0 });
    const k = Object.values(s.model.audit().keys)[0]!;
    expect(k.uploads).toBe(10);
    expect(k.creates).toBe(30);
    expect(k.maxActiveTasks).toBeLessThanOrEqual(3);
    expect(Object.values(s.model.audit().createsPerSource)).toEqual(Array(10).fill(3));
    // downloads: the final result of each photo, nothing else
    expect(s.fetched).toHaveLength(10);
    expect(new Set(s.fetched).size).toBe(10);
    expect(filesUnder(job.outputDir)).toEqual(names.map((n) => n).sort());
    // per-step progress, as status reads it from the ledger
    expect(r.status.steps.map((x) => [x.capability, x.done, x.working, x.waiting, x.failed, x.held])).toEqual([
      ['restore', 10, 0, 0, 0, 0],
      ['colorize', 10, 0, 0, 0, 0],
      ['upscale', 10, 0, 0, 0, 0],
    ]);
  });

  it('retries a failing step alone: earlier steps are never created again, and the photo is uploaded once', async () => {
    const job = await makeJob({ photos: 0, steps: THREE, extra: { maxAttempts: 6 } });
    cleanups.push(job.cleanup);
    await photos(job.inputDir, 12);
    const s = simSession({ job, sim: { seed: 7, outcomes: { fail: 0.3 }, latency: { medianMs: 10_000, sigma: 0.3 } } });
    const r = (await simulate(s)).result;
    const k = Object.values(s.model.audit().keys)[0]!;
    expect(k.uploads).toBe(12);
    const all = attempts(s);
    expect(all.filter((a) => a.status === 'FAIL').length).toBeGreaterThan(3);
    for (let item = 1; item <= 12; item++) {
      const mine = all.filter((a) => a.item_id === item);
      // steps only ever move forward: a FAIL is followed by another attempt at the same step
      for (let i = 1; i < mine.length; i++) expect(mine[i]!.step_index).toBeGreaterThanOrEqual(mine[i - 1]!.step_index);
      mine.forEach((a, i) => {
        if (a.status === 'FAIL' && i + 1 < mine.length) expect(mine[i + 1]!.step_index).toBe(a.step_index);
      });
      // each step: its FAILs and one success, nothing more
      for (let step = 0; step < 3; step++) {
        const at = mine.filter((a) => a.step_index === step);
        if (at.some((a) => a.status === 'SUCCESS')) expect(at.filter((a) => a.status !== 'FAIL')).toHaveLength(1);
      }
    }
    expect(r.status.done + r.status.failed).toBe(12);
  });

  it('keeps intermediates only when asked, and writes a sidecar with the source hash, steps, task ids and timings', async () => {
    const job = await makeJob({
      photos: 0,
      steps: [{ capability: 'restore' }, { capability: 'upscale', resolution: '8K', mode: 'portrait' }],
      extra: { output: { dir: './out', keepIntermediates: true, sidecar: true } },
    });
    cleanups.push(job.cleanup);
    await writePhoto(path.join(job.inputDir, 'album/grandma.jpg'), 3);
    const s = simSession({ job, sim: { seed: 7 } });
    const r = (await simulate(s)).result;
    expect(r.exitCode).toBe(0);
    expect(filesUnder(job.outputDir)).toEqual(['album/grandma.jpg', 'album/grandma.jpg.json', 'album/grandma.restore.jpg']);
    const car = JSON.parse(readFileSync(path.join(job.outputDir, 'album/grandma.jpg.json'), 'utf8'));
    const { createHash } = await import('node:crypto');
    const sha = createHash('sha256')
      .update(readFileSync(path.join(job.inputDir, 'album/grandma.jpg')))
      .digest('hex');
    expect(car).toMatchObject({
      darkroom: 1,
      output: 'album/grandma.jpg',
      type: 'jpg',
      source: { kind: 'file', name: 'album/grandma.jpg', sha256: sha },
      sameContent: ['album/grandma.jpg'],
      steps: [
        { step: 1, capability: 'restore', options: {}, businessType: 'RESTORE', attempts: 1 },
        { step: 2, capability: 'upscale', options: { resolution: '8K', mode: 'portrait' }, businessType: 'UPSCALE', attempts: 1 },
      ],
    });
    for (const st of car.steps) {
      expect(st.taskId).toMatch(/\S/);
      expect(st.taskIds).toEqual([st.taskId]);
      expect(st.durationMs).toBeGreaterThan(0);
      expect(Date.parse(st.endedAt)).toBeGreaterThan(Date.parse(st.startedAt));
    }
    expect(car.timings.totalMs).toBeGreaterThanOrEqual(car.timings.tasksMs);
    // the intermediate was fetched once, the final once
    expect(s.fetched).toHaveLength(2);
  });
});
