/**
 * The scale bench's run section (`npm run bench:scale`): a run's start over an archive of
 * 100,000 and of 1,000,000 real photos (tiny PNGs in folders of 100: bench/photos.ts), each
 * `darkroom run` a process of its own through the real CLI against the simulator over HTTP,
 * on a first run (an empty ledger) and on a resume (every photo recorded by the first):
 *
 * - first call: seconds from the process's start to its first upload reaching the service
 *   (and its first create);
 * - discovery: seconds from the start until its whole walk is recorded (the ledger's
 *   discovery generation completes), and the photos recorded a second over it;
 * - peak RSS: the process's peak resident size over the run (getrusage's maxRSS at exit,
 *   maxrss.mjs).
 *
 * Each run is interrupted (Ctrl-C, as an operator would) once its discovery is recorded and
 * its first create made, or at the cap (`--timeout-min`, a run of each kind): the figures are
 * the start's, not the night's; a discovery cut short says how far it came. They are printed
 * beside the same figures of the code before this work (bench/scale/run-baseline.json, made
 * by this script with `--darkroom` pointing at that build and `--save`).
 *
 *   tsx bench/scale/run.ts [--photos 100000,1000000] [--darkroom path/to/bin/darkroom.js]
 *                          [--save FILE] [--baseline FILE] [--timeout-min N] [--fresh]
 *
 * The archive is kept between runs ($DARKROOM_SCALE_DIR, else the temp folder): a million
 * files take minutes to write (about 4 GB of blocks, a million inodes).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import { startSim, type RunningSim } from '../../src/sim/server.js';
import { fingerprintKey } from '../../src/spec/key.js';
import { writePhotos } from '../photos.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const HOOK = fileURLToPath(new URL('./maxrss.mjs', import.meta.url));
const KEY = 'scale-run-bench-key-0123456789';
const FP = fingerprintKey(KEY);

export interface RunFigure {
  readonly photos: number;
  readonly kind: 'first' | 'resume';
  /** Seconds from the process's start to its first upload and first create at the service; null when none came. */
  readonly firstUploadS: number | null;
  readonly firstCreateS: number | null;
  /** Seconds from the start until the discovery's walk was wholly recorded; null when it was not before the end. */
  readonly discoveryS: number | null;
  /** Names the discovery recorded by the end (all of them, or as far as it came before the cap). */
  readonly recorded: number;
  /** Names recorded a second over the discovery, or over the run when it was cut short (a resume records each name again: its walk's rate). */
  readonly recordPerS: number | null;
  readonly peakMb: number | null;
  readonly exitCode: number | null;
  /** Seconds from the start to the process's exit. */
  readonly wallS: number;
}

interface RunFigures {
  readonly darkroom: string;
  readonly date: string;
  readonly runs: RunFigure[];
}

/** The figures the issue gives for the code before this work (100,000 photos, this machine), when no baseline file has them. */
const ISSUE_FIGURES: Record<string, { firstS: number; peakMb: number }> = {
  'first:100000': { firstS: 45.0, peakMb: 593 },
  'resume:100000': { firstS: 9.7, peakMb: 536 },
};

/** The archive of `n` photos, written once and reused. */
function archive(base: string, n: number, fresh: boolean): string {
  const dir = path.join(base, `run-${n}`, 'photos');
  const done = path.join(base, `run-${n}`, 'written');
  if (fresh) rmSync(path.join(base, `run-${n}`), { recursive: true, force: true });
  if (!existsSync(done)) {
    rmSync(dir, { recursive: true, force: true });
    const t = performance.now();
    process.stderr.write(`writing ${n.toLocaleString('en-US')} photos under ${dir}…\n`);
    writePhotos(dir, n);
    writeFileSync(done, String(n));
    process.stderr.write(`  written in ${((performance.now() - t) / 1000).toFixed(0)} s\n`);
  }
  return dir;
}

/** A job over the archive, its ledger and state in `work`. */
function job(work: string, photos: string): string {
  mkdirSync(work, { recursive: true });
  const file = path.join(work, 'jobs.yaml');
  writeFileSync(
    file,
    [
      `input: { dir: ${JSON.stringify(photos)} }`,
      `output: { dir: ${JSON.stringify(path.join(work, 'out'))}, metadata: none }`,
      'steps: [{ capability: enhance }]',
      'service: { apiKeyEnv: DARKROOM_SCALE_KEY }',
      `ledger: ${JSON.stringify(path.join(work, 'darkroom.db'))}`,
      '',
    ].join('\n'),
  );
  return file;
}

/** The latest complete discovery's generation (0 before any, or before the ledger exists). */
function generation(ledgerFile: string): number {
  if (!existsSync(ledgerFile)) return 0;
  let db: Database.Database | undefined;
  try {
    db = new Database(ledgerFile, { readonly: true, fileMustExist: true, timeout: 50 });
    const r = db.prepare("SELECT value FROM meta WHERE key = 'inputs.generation'").get() as { value: string } | undefined;
    return r ? Number(r.value) : 0;
  } catch {
    return 0;
  } finally {
    db?.close();
  }
}

/** Names the latest discovery has recorded (complete or not), once the run is over. */
function recordedNames(ledgerFile: string): number {
  if (!existsSync(ledgerFile)) return 0;
  const db = new Database(ledgerFile, { readonly: true, fileMustExist: true });
  try {
    return (db.prepare('SELECT COUNT(*) AS n FROM inputs WHERE seen_gen = (SELECT MAX(seen_gen) FROM inputs)').get() as { n: number }).n;
  } finally {
    db.close();
  }
}

/** One `darkroom run`, interrupted once its discovery is recorded and its first create made (or at the cap). */
async function timedRun(
  sim: RunningSim,
  darkroom: string,
  jobsFile: string,
  work: string,
  photos: number,
  kind: RunFigure['kind'],
  timeoutMs: number,
): Promise<RunFigure> {
  const ledgerFile = path.join(work, 'darkroom.db');
  const rssFile = path.join(work, `rss-${kind}.txt`);
  rmSync(rssFile, { force: true });
  const genBefore = generation(ledgerFile);
  const audit = () => sim.model.audit().keys[FP] ?? { uploads: 0, creates: 0 };
  const before = audit();
  const t0 = performance.now();
  const child = spawn(process.execPath, ['--import', HOOK, darkroom, 'run', jobsFile, '--base-url', sim.apiUrl, '--quiet'], {
    cwd: work,
    env: {
      ...process.env,
      DARKROOM_SCALE_KEY: KEY,
      DARKROOM_STATE_DIR: path.join(work, 'state'),
      DARKROOM_BENCH_RSS_FILE: rssFile,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  let ended = false;
  void exited.then(() => (ended = true));
  const s = (ms: number) => Math.round(ms) / 1000;
  let firstUploadS: number | null = null;
  let firstCreateS: number | null = null;
  let discoveryS: number | null = null;
  let lastGenCheck = 0;
  while (!ended) {
    await new Promise((r) => setTimeout(r, 20));
    const now = performance.now();
    const a = audit();
    if (firstUploadS === null && a.uploads > before.uploads) firstUploadS = s(now - t0);
    if (firstCreateS === null && a.creates > before.creates) firstCreateS = s(now - t0);
    if (discoveryS === null && now - lastGenCheck >= 250) {
      lastGenCheck = now;
      if (generation(ledgerFile) > genBefore) discoveryS = s(now - t0);
    }
    const over = now - t0 > timeoutMs;
    if ((discoveryS !== null && firstCreateS !== null) || over) {
      child.kill('SIGINT');
      break;
    }
  }
  const exitCode = await exited;
  const wallS = s(performance.now() - t0);
  const recorded = recordedNames(ledgerFile);
  if (exitCode !== 0 && exitCode !== 130) process.stderr.write(`  ${kind} run exited ${exitCode}: ${stderr.trim().split('\n').pop()}\n`);
  const peakMb = existsSync(rssFile) ? Math.round(Number(readFileSync(rssFile, 'utf8')) / 1024) : null;
  return {
    photos,
    kind,
    firstUploadS,
    firstCreateS,
    discoveryS,
    recorded,
    recordPerS: Math.round(recorded / (discoveryS ?? wallS)),
    peakMb,
    exitCode,
    wallS,
  };
}

function table(figures: RunFigures, baseline: RunFigures | undefined): string {
  const fmt = (v: number | null | undefined, digits = 1) => (v === null || v === undefined ? '—' : v.toFixed(digits));
  const rows = [
    '| photos | run | first call s (before) | first create s | discovery recorded s (before) | recorded /s (before) | peak RSS MB (before) | exit |',
    '|---:|---|---:|---:|---:|---:|---:|---:|',
  ];
  for (const r of figures.runs) {
    const b = baseline?.runs.find((x) => x.photos === r.photos && x.kind === r.kind);
    const issue = ISSUE_FIGURES[`${r.kind}:${r.photos}`];
    const beforeFirst = b?.firstUploadS ?? issue?.firstS;
    const beforePeak = b?.peakMb ?? issue?.peakMb;
    rows.push(
      `| ${r.photos.toLocaleString('en-US')} | ${r.kind} | ${fmt(r.firstUploadS)} (${fmt(beforeFirst)}) | ${fmt(r.firstCreateS)} | ` +
        `${r.discoveryS === null ? `> ${fmt(r.wallS)}, ${r.recorded.toLocaleString('en-US')} recorded` : fmt(r.discoveryS)} (${b ? (b.discoveryS === null ? `> ${fmt(b.wallS)}` : fmt(b.discoveryS)) : '—'}) | ` +
        `${r.recordPerS ?? '—'} (${b?.recordPerS ?? '—'}) | ${r.peakMb ?? '—'} (${beforePeak ?? '—'}) | ${r.exitCode ?? '—'} |`,
    );
  }
  return rows.join('\n');
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      photos: { type: 'string', default: '100000,1000000' },
      darkroom: { type: 'string', default: path.join(ROOT, 'bin', 'darkroom.js') },
      save: { type: 'string' },
      baseline: { type: 'string', default: path.join(ROOT, 'bench', 'scale', 'run-baseline.json') },
      'timeout-min': { type: 'string', default: '30' },
      fresh: { type: 'boolean', default: false },
    },
  });
  const sizes = values.photos.split(',').map((p) => Number(p.replace(/_/g, '')));
  const base = process.env.DARKROOM_SCALE_DIR ?? path.join(tmpdir(), 'darkroom-scale');
  const timeoutMs = Number(values['timeout-min']) * 60_000;
  const figures: RunFigures = { darkroom: values.darkroom, date: new Date().toISOString().slice(0, 10), runs: [] };
  for (const n of sizes) {
    const photos = archive(base, n, values.fresh);
    const work = path.join(base, `run-${n}`, `work-${process.pid}`);
    rmSync(work, { recursive: true, force: true });
    // The service's limits out of the way of a start; tasks of ~20 s, so the run has work while its discovery goes on.
    const sim = await startSim({
      keys: [KEY],
      seed: 1,
      processing: 'passthrough',
      limits: { callsPerMinute: 100_000, callsPerHour: 1_000_000 },
    });
    try {
      const jobsFile = job(work, photos);
      for (const kind of ['first', 'resume'] as const) {
        process.stderr.write(`${n.toLocaleString('en-US')} photos, ${kind} run…\n`);
        const f = await timedRun(sim, values.darkroom, jobsFile, work, n, kind, timeoutMs);
        process.stderr.write(`  ${JSON.stringify(f)}\n`);
        figures.runs.push(f);
      }
    } finally {
      await sim.close();
      rmSync(work, { recursive: true, force: true });
    }
  }
  if (values.save) writeFileSync(values.save, JSON.stringify(figures, null, 2) + '\n');
  const baseline = existsSync(values.baseline) ? (JSON.parse(readFileSync(values.baseline, 'utf8')) as RunFigures) : undefined;
  process.stdout.write(
    `\n## A run's start (${figures.darkroom}; before: ${baseline ? `${baseline.darkroom}, ${baseline.date}` : "the issue's figures"})\n\n`,
  );
  process.stdout.write(table(figures, baseline) + '\n');
}

await main();
