import { mkdirSync } from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { afterEach, describe, expect, it } from 'vitest';
import { filesUnder, makeJob, writePhoto } from '../helpers/job.js';
import { simSession, simulate } from '../helpers/simulate.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

/** A grey subject on a white ground: background removal has something to keep, colorize something to tint. */
async function subject(file: string, width = 40, height = 32): Promise<void> {
  mkdirSync(path.dirname(file), { recursive: true });
  const square = await sharp({
    create: { width: Math.round(width / 2), height: Math.round(height / 2), channels: 3, background: { r: 90, g: 90, b: 90 } },
  })
    .png()
    .toBuffer();
  await sharp({ create: { width, height, channels: 3, background: { r: 255, g: 255, b: 255 } } })
    .composite([{ input: square, left: Math.round(width / 4), top: Math.round(height / 4) }])
    .jpeg({ quality: 95 })
    .toFile(file);
}

async function pixel(file: string, x: number, y: number): Promise<number[]> {
  const { data, info } = await sharp(file).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  const i = (y * info.width + x) * 4;
  return [data[i]!, data[i + 1]!, data[i + 2]!, data[i + 3]!];
}

/** From a job's steps to the file on disk, each capability with the options the spec gives it, results really processed. */
describe('every capability, from config to downloaded result', () => {
  const cases: Array<{ step: Record<string, unknown>; out: string; check: (file: string) => Promise<void> }> = [
    {
      step: { capability: 'enhance', mode: 'text' },
      out: 'p.jpg',
      check: async (f) => expect(await sharp(f).metadata()).toMatchObject({ format: 'jpeg', width: 40, height: 32 }),
    },
    {
      step: { capability: 'restore' },
      out: 'p.jpg',
      check: async (f) => expect(await sharp(f).metadata()).toMatchObject({ format: 'jpeg', width: 40, height: 32 }),
    },
    {
      step: { capability: 'colorize' },
      out: 'p.jpg',
      check: async (f) => {
        const [r, , b] = await pixel(f, 20, 15);
        expect(r! - b!).toBeGreaterThan(15); // grey became warm
      },
    },
    {
      step: { capability: 'unblur', mode: 'general' },
      out: 'p.jpg',
      check: async (f) => expect(await sharp(f).metadata()).toMatchObject({ format: 'jpeg', width: 40, height: 32 }),
    },
    {
      step: { capability: 'upscale', resolution: '4K', mode: 'portrait' },
      out: 'p.jpg',
      check: async (f) => expect(await sharp(f).metadata()).toMatchObject({ width: 80, height: 64 }),
    },
    {
      step: { capability: 'upscale', resolution: '8K' },
      out: 'p.jpg',
      check: async (f) => expect(await sharp(f).metadata()).toMatchObject({ width: 160, height: 128 }),
    },
    {
      step: { capability: 'remove-background' },
      out: 'p.png', // the result's real type, whatever the input's
      check: async (f) => {
        expect(await sharp(f).metadata()).toMatchObject({ format: 'png', hasAlpha: true, width: 40, height: 32 });
        expect((await pixel(f, 0, 0))[3]).toBe(0);
        expect((await pixel(f, 20, 15))[3]).toBe(255);
      },
    },
    {
      step: { capability: 'image2image', style: 'sepia', prompt: 'a warm old print', negativePrompt: 'blue' },
      out: 'p.jpg',
      check: async (f) => {
        const [r, g, b] = await pixel(f, 20, 15);
        expect(r!).toBeGreaterThan(g!);
        expect(g!).toBeGreaterThan(b!);
      },
    },
  ];

  it.each(cases)('$step.capability $step.mode $step.resolution $step.style', async ({ step, out, check }) => {
    const job = await makeJob({ photos: 0, steps: [step] });
    cleanups.push(job.cleanup);
    await subject(path.join(job.inputDir, 'p.jpg'));
    const s = simSession({ job, sim: { seed: 7, processing: 'sharp', latency: { medianMs: 5_000, sigma: 0.2 } } });
    const r = (await simulate(s)).result;
    expect(r.status.problems).toEqual([]);
    expect(r.exitCode).toBe(0);
    expect(filesUnder(job.outputDir)).toEqual([out]);
    await check(path.join(job.outputDir, out));
  });

  it('polls colorize and background removal with the configured businessType', async () => {
    const job = await makeJob({
      photos: 0,
      steps: [{ capability: 'colorize' }, { capability: 'remove-background' }],
      extra: {
        service: {
          apiKeyEnv: 'DARKROOM_TEST_KEY',
          baseUrl: 'http://sim.invalid',
          businessTypes: { colorize: 'COLORIZE', 'remove-background': 'REMOVE_BACKGROUND' },
        },
      },
    });
    cleanups.push(job.cleanup);
    await subject(path.join(job.inputDir, 'p.jpg'));
    const s = simSession({ job, sim: { seed: 7, processing: 'sharp' } });
    const r = (await simulate(s)).result;
    expect(r.exitCode).toBe(0);
    expect(filesUnder(job.outputDir)).toEqual(['p.png']);
  });

  it('names the capability and the value when a configured businessType finds no task', async () => {
    const job = await makeJob({
      photos: 0,
      steps: [{ capability: 'colorize' }],
      extra: { service: { apiKeyEnv: 'DARKROOM_TEST_KEY', baseUrl: 'http://sim.invalid', businessTypes: { colorize: 'COLOURISE' } } },
    });
    cleanups.push(job.cleanup);
    for (const i of [1, 2, 3, 4]) await writePhoto(path.join(job.inputDir, `${i}.jpg`), i);
    const s = simSession({ job, sim: { seed: 7 } });
    const r = (await simulate(s)).result;
    expect(r.exitCode).toBe(1);
    expect(r.status.failed).toBe(4);
    // poll.ts gives early 404s the benefit of the doubt (a task may vanish); then it names the cause
    expect(r.status.problems.some((p) => /businessType COLOURISE used for colorize is probably wrong/.test(p.reason ?? ''))).toBe(true);
  });
});
