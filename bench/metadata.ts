/**
 * The metadata step's cost (`npm run bench`, or `tsx bench/metadata.ts` alone): the real CLI
 * against the HTTP simulator on loopback, a fast service (tasks of 20–60 ms, rate limits out
 * of the way, the spec's 3 task slots), the same photos with `output.metadata: none` and
 * `all`, side by side: wall time and peak RSS of darkroom (and of its ExifTool processes).
 * Then the metadata step alone: files per second through ExifTool, as the download stage
 * calls it. Wall time is real time here: ExifTool is real work, which a virtual clock would
 * not count.
 *
 *   tsx bench/metadata.ts [--photos N] [--rounds N]
 */
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { stringify } from 'yaml';
import { ExifToolProcess } from '../src/metadata/exiftool.js';
import { MetadataWriter } from '../src/metadata/writer.js';
import { startSim } from '../src/sim/server.js';
import { carryTo, SCAN_TAGS } from '../test/helpers/metadata.js';
import { darkroomEnv } from './child.js';

const BIN = fileURLToPath(new URL('../bin/darkroom.js', import.meta.url));
const KEY = 'bench-metadata-key-7e2c';

export interface MetadataRun {
  readonly metadata: 'none' | 'all';
  readonly wallS: number;
  readonly peakRssMb: number;
  /** The most resident memory darkroom's ExifTool processes held at once. */
  readonly exiftoolRssMb: number;
  readonly exitCode: number | null;
}

export interface MetadataBench {
  readonly photos: number;
  readonly runs: readonly MetadataRun[];
  /** Median wall time with `all` ÷ with `none` (target ≤ 1.25). */
  readonly ratio: number;
  /** The metadata step alone: outputs carried per second, one file at a time and as the download stage runs them. */
  readonly filesPerSecond: { readonly serial: number; readonly parallel: number };
}

/** Photos of 640×480, each its own pixels, with the metadata of an archive's scan (written by ExifTool). */
async function writePhotos(dir: string, n: number): Promise<void> {
  mkdirSync(dir, { recursive: true });
  const tool = new ExifToolProcess({ maxProcs: 1 });
  const template = path.join(dir, '..', 'template.jpg');
  await sharp({ create: { width: 640, height: 480, channels: 3, background: '#808080' } })
    .jpeg()
    .toFile(template);
  await tool.run(['-overwrite_original', ...SCAN_TAGS, template]);
  for (let i = 0; i < n; i++) {
    const noise = { type: 'gaussian' as const, mean: 60 + (i % 120), sigma: 25 };
    await sharp({ create: { width: 640, height: 480, channels: 3, background: '#000000', noise } })
      .jpeg({ quality: 88 })
      .toFile(path.join(dir, `scan-${String(i).padStart(4, '0')}.jpg`));
  }
  // One ExifTool command for all of them: the template's tags onto every photo.
  await tool.run(['-overwrite_original', '-tagsFromFile', template, '-all:all', dir]);
  await tool.end();
}

/** Resident memory of a process (kB) and its peak (VmHWM), from /proc; zeros where there is no /proc. */
export function memoryOf(pid: number): { rss: number; hwm: number } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (k: string) => Number(status.match(new RegExp(`^${k}:\\s+(\\d+)`, 'm'))?.[1] ?? 0);
    return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
  } catch {
    return { rss: 0, hwm: 0 };
  }
}

/** The pids whose parent is `pid`, and theirs. */
export function descendants(pid: number): number[] {
  const out: number[] = [];
  if (!existsSync('/proc')) return out;
  const parents = new Map<number, number>();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      parents.set(
        Number(d),
        Number(
          readFileSync(`/proc/${d}/stat`, 'utf8')
            .replace(/^.*\) /s, '')
            .split(' ')[1],
        ),
      );
    } catch {
      // gone
    }
  }
  const walk = (p: number) => {
    for (const [c, pp] of parents) {
      if (pp !== p) continue;
      out.push(c);
      walk(c);
    }
  };
  walk(pid);
  return out;
}

async function runOnce(root: string, photos: string, apiUrl: string, metadata: 'none' | 'all'): Promise<MetadataRun> {
  const dir = mkdtempSync(path.join(root, `run-${metadata}-`));
  const jobs = path.join(dir, 'jobs.yaml');
  writeFileSync(
    jobs,
    stringify({
      service: { apiKeyEnv: 'DARKROOM_API_KEY' },
      limits: { callsPerMinute: 1_000_000, callsPerHour: 10_000_000, activeTasks: 3 },
      input: { dir: photos },
      output: { dir: './out', metadata },
      steps: [{ capability: 'enhance' }],
      ledger: './darkroom.db',
      log: { level: 'warn' },
    }),
  );
  const started = performance.now();
  const child = spawn(process.execPath, [BIN, 'run', jobs, '--base-url', apiUrl, '--quiet'], {
    env: darkroomEnv(KEY, path.join(dir, 'state')),
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  let peak = 0;
  let exiftool = 0;
  const sample = setInterval(() => {
    peak = Math.max(peak, memoryOf(child.pid!).hwm);
    exiftool = Math.max(
      exiftool,
      descendants(child.pid!).reduce((a, p) => a + memoryOf(p).rss, 0),
    );
  }, 50);
  const exitCode = await new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  clearInterval(sample);
  const wallS = (performance.now() - started) / 1000;
  return { metadata, wallS, peakRssMb: peak / 1024, exiftoolRssMb: exiftool / 1024, exitCode };
}

/** The metadata step alone: every photo's tags carried onto a copy of a service-like result. */
async function stepAlone(root: string, photos: string): Promise<{ serial: number; parallel: number }> {
  const files = readdirSync(photos).map((f) => path.join(photos, f));
  const raw = path.join(root, 'result.jpg');
  await sharp(files[0]!).jpeg({ quality: 92 }).toFile(raw);
  const work = path.join(root, 'step');
  mkdirSync(work, { recursive: true });
  const provenance = (i: number) => ({
    aiSystem: 'bench',
    agent: 'darkroom bench',
    original: { path: path.basename(files[i]!), sha256: null },
    steps: [{ action: 'edited', whenMs: 0, parameters: 'capability=enhance; task=t' }],
    identity: String(i),
  });
  const writer = new MetadataWriter();
  await writer.start();
  const time = async (inFlight: number): Promise<number> => {
    let next = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: inFlight }, async () => {
        for (let i = next++; i < files.length; i = next++) {
          const tmp = path.join(work, `raw-${inFlight}-${i}.jpg`);
          copyFileSync(raw, tmp);
          await carryTo(
            writer,
            { raw: tmp, kind: 'jpeg', level: 'all', source: { file: files[i]! }, provenance: provenance(i) },
            path.join(work, `out-${inFlight}-${i}.jpg`),
          );
        }
      }),
    );
    return files.length / ((performance.now() - t0) / 1000);
  };
  const serial = await time(1);
  const parallel = await time(4);
  await writer.end();
  return { serial, parallel };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export async function measureMetadata(opts: { photos?: number; rounds?: number } = {}): Promise<MetadataBench> {
  const n = opts.photos ?? 200;
  const rounds = opts.rounds ?? 2;
  const root = mkdtempSync(path.join(tmpdir(), 'darkroom-bench-metadata-'));
  const sim = await startSim({
    keys: [KEY],
    seed: 5,
    latency: { kind: 'uniform', minMs: 20, maxMs: 60 },
    limits: { callsPerMinute: 1_000_000, callsPerHour: 10_000_000, activeTasks: 3 },
  });
  try {
    const photos = path.join(root, 'photos');
    await writePhotos(photos, n);
    const runs: MetadataRun[] = [];
    // Alternated, so a machine that slows down or speeds up during the bench weighs on both alike.
    for (let r = 0; r < rounds; r++) for (const m of ['none', 'all'] as const) runs.push(await runOnce(root, photos, sim.apiUrl, m));
    const wall = (m: 'none' | 'all') => median(runs.filter((x) => x.metadata === m).map((x) => x.wallS));
    return { photos: n, runs, ratio: wall('all') / wall('none'), filesPerSecond: await stepAlone(root, photos) };
  } finally {
    await sim.close();
    rmSync(root, { recursive: true, force: true });
  }
}

export function formatMetadataBench(b: MetadataBench): string {
  const by = (m: 'none' | 'all') => b.runs.filter((r) => r.metadata === m);
  const med = (xs: number[]) => median(xs).toFixed(1);
  const row = (m: 'none' | 'all') =>
    `| metadata: ${m.padEnd(4)} | ${String(b.photos).padStart(6)} | ${by(m)
      .map((r) => r.wallS.toFixed(1))
      .join(' / ')
      .padStart(
        11,
      )} | ${med(by(m).map((r) => r.wallS)).padStart(8)} | ${med(by(m).map((r) => r.peakRssMb)).padStart(11)} | ${med(by(m).map((r) => r.exiftoolRssMb)).padStart(15)} |`;
  return [
    '| run            | photos | wall s each | median s | peak RSS MB | ExifTool RSS MB |',
    '|----------------|-------:|------------:|---------:|------------:|----------------:|',
    row('none'),
    row('all'),
    `wall with metadata ÷ without: ${b.ratio.toFixed(2)} (target ≤ 1.25); peak RSS of darkroom with metadata: ${Math.max(...by('all').map((r) => r.peakRssMb)).toFixed(0)} MB (target < 300 MB)`,
    `metadata step alone: ${b.filesPerSecond.serial.toFixed(1)} files/s one at a time, ${b.filesPerSecond.parallel.toFixed(1)} files/s with 4 in flight (640×480 JPEGs with EXIF, IPTC and XMP)`,
    b.runs.some((r) => r.exitCode !== 0) ? `a run exited ${b.runs.map((r) => r.exitCode).join(', ')}` : '',
  ]
    .filter(Boolean)
    .join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const opt = (name: string) => {
    const i = args.indexOf(name);
    return i >= 0 ? Number(args[i + 1]) : undefined;
  };
  const b = await measureMetadata({ photos: opt('--photos'), rounds: opt('--rounds') });
  console.log(formatMetadataBench(b));
  console.log(JSON.stringify({ metadata: b }));
}
