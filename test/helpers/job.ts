import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { parse, stringify } from 'yaml';

export interface TestJob {
  readonly dir: string;
  readonly inputDir: string;
  readonly outputDir: string;
  readonly jobsFile: string;
  readonly ledgerFile: string;
  /** Each photo written, by path under the input folder: its pixel size. */
  readonly sizes: Map<string, { width: number; height: number }>;
  cleanup(): void;
}

/** A temp folder of its own for each test: photos, a jobs YAML, and where the ledger goes. */
export function makeTempDir(prefix = 'darkroom-test-'): string {
  return mkdtempSync(path.join(tmpdir(), prefix));
}

/** Small, distinct images (size and tint vary with i) so results can be told apart. */
export async function writePhoto(
  file: string,
  i: number,
  format: 'jpeg' | 'png' | 'webp' = 'jpeg',
): Promise<{ width: number; height: number }> {
  const width = 48 + (i % 5) * 8;
  const height = 32 + (i % 3) * 8;
  mkdirSync(path.dirname(file), { recursive: true });
  let img = sharp({
    create: { width, height, channels: 3, background: { r: (i * 37) % 256, g: (i * 71) % 256, b: (i * 113) % 256 } },
  });
  img = format === 'jpeg' ? img.jpeg() : format === 'png' ? img.png() : img.webp();
  await img.toFile(file);
  return { width, height };
}

export interface JobOptions {
  readonly photos?: number;
  /** Where the photos' tints start: jobs made with other offsets hold other images (0 by default). */
  readonly photoOffset?: number;
  readonly steps?: unknown[];
  readonly baseUrl?: string;
  readonly extra?: Record<string, unknown>;
}

export async function makeJob(opts: JobOptions = {}): Promise<TestJob> {
  const dir = makeTempDir();
  const inputDir = path.join(dir, 'photos');
  const outputDir = path.join(dir, 'out');
  mkdirSync(inputDir, { recursive: true });
  const sizes = new Map<string, { width: number; height: number }>();
  const n = opts.photos ?? 4;
  for (let i = 0; i < n; i++) {
    const rel = i % 3 === 0 ? `album ${i % 2}/photo-${i}.jpg` : i % 3 === 1 ? `photo-${i}.png` : `nested/deep/photo-${i}.webp`;
    const format = rel.endsWith('.png') ? 'png' : rel.endsWith('.webp') ? 'webp' : 'jpeg';
    sizes.set(rel, await writePhoto(path.join(inputDir, rel), i + (opts.photoOffset ?? 0), format));
  }
  const jobsFile = path.join(dir, 'jobs.yaml');
  const job = {
    service: { ...(opts.baseUrl ? { baseUrl: opts.baseUrl } : {}), apiKeyEnv: 'DARKROOM_TEST_KEY' },
    input: { dir: './photos' },
    // The jobs the scheduling and robustness tests make say nothing of metadata: ExifTool's
    // real time per output would only slow their simulations (500 photos: +25 s). Tests of
    // the metadata step (test/metadata, the e2e and crash tests) ask for it, or write their
    // own job files, where the default (all) holds.
    output: { dir: './out', metadata: 'none' },
    steps: opts.steps ?? [{ capability: 'upscale', resolution: '4K' }],
    ledger: './state/darkroom.db',
    ...opts.extra,
  };
  writeFileSync(jobsFile, stringify(job));
  return {
    dir,
    inputDir,
    outputDir,
    jobsFile,
    ledgerFile: path.join(dir, 'state', 'darkroom.db'),
    sizes,
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** Rewrite the job file's steps, as an operator editing jobs.yaml between runs. */
export function setSteps(job: TestJob, steps: unknown[]): void {
  const doc = parse(readFileSync(job.jobsFile, 'utf8')) as Record<string, unknown>;
  writeFileSync(job.jobsFile, stringify({ ...doc, steps }));
}

/** Every file under a folder, relative, with '/', sorted (temp files of darkroom included, so a leak shows). */
export function filesUnder(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d)) {
      const p = path.join(d, e);
      if (statSync(p).isDirectory()) walk(p);
      else out.push(path.relative(dir, p).split(path.sep).join('/'));
    }
  };
  walk(dir);
  return out.sort();
}
