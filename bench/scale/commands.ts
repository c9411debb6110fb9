/**
 * `npm run bench:scale`: the commands over an archive of 100,000 and of 1,000,000 photos
 * (bench/scale/seed.ts makes it, or reuses the one it made), each through the real CLI as a
 * process of its own: its wall time and its peak resident size (getrusage's maxRSS, written at
 * exit by maxrss.mjs), printed beside the same figures of the code before this work
 * (bench/scale/baseline.json, measured by this script with `--darkroom` pointing at that
 * build), and the ledger's size on disk.
 *
 *   tsx bench/scale/commands.ts [--photos 100000,1000000] [--only status,watch,plan,manifest,report,review]
 *                               [--darkroom path/to/bin/darkroom.js] [--save FILE] [--baseline FILE] [--timeout-min N]
 *                               [--fresh] [--inputs]
 *
 * `--inputs` has the seed write the input files too (`plan` reads them; without them it finds
 * none and reads the ledger alone). The archive is kept between runs ($DARKROOM_SCALE_DIR, else
 * the temp folder): a million photos take minutes to seed.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import { alignSchema, seedArchive, sizeOnDisk, type ScaleArchive } from './seed.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const HOOK = fileURLToPath(new URL('./maxrss.mjs', import.meta.url));
const COMMANDS = ['status', 'watch', 'plan', 'manifest', 'report', 'report-bare', 'review'] as const;
export type Command = (typeof COMMANDS)[number];

/** One command's figures at one size. */
export interface CommandFigure {
  readonly command: Command;
  readonly photos: number;
  /** Seconds, end to end (process start included); null when it did not finish. */
  readonly wallS: number | null;
  /** Peak resident size, MB; null when unknown (it did not finish). */
  readonly peakMb: number | null;
  /** What else was measured (a refresh's cost, the first view, the page's size) or why it did not finish. */
  readonly note: string;
  /** The machine's load average (1 min) before and after: figures on a 2-core machine shared with others move with it. */
  readonly load?: readonly [number, number];
}

export interface ScaleFigures {
  readonly darkroom: string;
  readonly date: string;
  readonly commands: CommandFigure[];
  readonly ledgers: { photos: number; bytes: number; pages: number; freePages: number; seedS: number }[];
}

const TARGETS: Record<Command, { wallS?: number; note: string }> = {
  status: { wallS: 1, note: '< 1 s, < 400 MB' },
  watch: { note: 'a refresh reads only what changed; < 400 MB' },
  plan: { wallS: 180, note: '< 3 min, < 400 MB' },
  manifest: { wallS: 60, note: '< 1 min, < 400 MB' },
  report: { note: 'pages of a few thousand photos; < 400 MB' },
  'report-bare': { note: 'the same without thumbnails (--no-thumbs); < 400 MB' },
  review: { note: '< 400 MB' },
};

interface Ran {
  readonly wallS: number;
  readonly peakMb: number | null;
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly timedOut: boolean;
}

function rssFile(): { file: string; read: () => number | null; done: () => void } {
  const dir = mkdtempSync(path.join(tmpdir(), 'darkroom-rss-'));
  const file = path.join(dir, 'rss');
  return {
    file,
    read: () => (existsSync(file) ? Number(readFileSync(file, 'utf8')) / 1024 : null),
    done: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** A live process's peak resident size so far, MB (Linux's VmHWM): a command stopped at the cap writes no maxRSS at exit. */
function peakSoFar(pid: number | undefined): number | null {
  try {
    const m = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : null;
  } catch {
    return null;
  }
}

/** `darkroom <args>` as a process of its own, timed, its peak RSS read at its exit. */
function runCli(bin: string, args: readonly string[], cwd: string, timeoutMs: number): Promise<Ran> {
  const rss = rssFile();
  const started = performance.now();
  const child = spawn(process.execPath, ['--import', HOOK, bin, ...args], {
    cwd,
    env: { ...process.env, DARKROOM_BENCH_RSS_FILE: rss.file, NO_COLOR: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  // Whole (a plan --json of a million photos lists its skipped ones: megabytes), up to 64 MB.
  child.stdout.on('data', (d: Buffer) => (stdout = stdout.length < 64e6 ? stdout + d.toString() : stdout));
  child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-20_000)));
  let timedOut = false;
  let peakWhenStopped: number | null = null;
  const timer = setTimeout(() => {
    timedOut = true;
    peakWhenStopped = peakSoFar(child.pid);
    child.kill('SIGKILL');
  }, timeoutMs);
  return new Promise((resolve) => {
    child.on('close', (code) => {
      clearTimeout(timer);
      const peakMb = rss.read() ?? peakWhenStopped;
      rss.done();
      resolve({ wallS: (performance.now() - started) / 1000, peakMb, code, stdout, stderr, timedOut });
    });
  });
}

function simple(command: Command, photos: number, r: Ran, note: string, okCodes = [0, 1]): CommandFigure {
  if (r.timedOut) {
    const at = r.peakMb === null ? '' : `, ${r.peakMb.toFixed(0)} MB resident at most by then`;
    return {
      command,
      photos,
      wallS: null,
      peakMb: r.peakMb,
      note: `did not finish within ${(r.wallS / 60).toFixed(0)} min (stopped${at})`,
    };
  }
  if (r.code === null || !okCodes.includes(r.code)) {
    return { command, photos, wallS: r.wallS, peakMb: r.peakMb, note: `exit ${r.code}: ${r.stderr.trim().split('\n').at(-1) ?? ''}` };
  }
  return { command, photos, wallS: r.wallS, peakMb: r.peakMb, note };
}

/** `status --watch --json`: the first frame, then each refresh's own cost (the time between frames less the 2 s wait). */
function measureWatch(bin: string, a: ScaleArchive, timeoutMs: number): Promise<CommandFigure> {
  const rss = rssFile();
  const started = performance.now();
  const child = spawn(process.execPath, ['--import', HOOK, bin, 'status', a.jobs, '--watch', '--json'], {
    cwd: a.dir,
    env: { ...process.env, DARKROOM_BENCH_RSS_FILE: rss.file },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const frames: number[] = [];
  let buf = '';
  child.stdout.on('data', (d: Buffer) => {
    buf += d.toString();
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      buf = buf.slice(nl + 1);
      frames.push(performance.now());
      if (frames.length === 4) child.kill('SIGINT');
    }
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  return new Promise((resolve) => {
    child.on('close', () => {
      clearTimeout(timer);
      const peakMb = rss.read();
      rss.done();
      if (frames.length < 4) {
        resolve({ command: 'watch', photos: a.photos, wallS: null, peakMb, note: `${frames.length} frames before it ended` });
        return;
      }
      const refreshes = frames.slice(1).map((t, i) => t - frames[i]! - 2000);
      const first = (frames[0]! - started) / 1000;
      resolve({
        command: 'watch',
        photos: a.photos,
        wallS: first,
        peakMb,
        note: `first frame ${first.toFixed(2)} s; a refresh ${Math.max(...refreshes).toFixed(0)} ms at most`,
      });
    });
  });
}

function get(
  port: number,
  p: string,
  headers: Record<string, string>,
): Promise<{ status: number; bytes: number; text: string; count: number }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: p, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const all = Buffer.concat(chunks);
        const big = all.length >= 50e6;
        const count = big ? all.toString('latin1').split('"id":').length - 1 : 0;
        resolve({ status: res.statusCode ?? 0, bytes: all.length, text: big ? '' : all.toString('utf8'), count });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

/** `darkroom review`: the page's first view (the page and the photos it lists first), then stopped. */
async function measureReview(bin: string, a: ScaleArchive, timeoutMs: number): Promise<CommandFigure> {
  const rss = rssFile();
  const started = performance.now();
  const child = spawn(process.execPath, ['--import', HOOK, bin, 'review', a.jobs], {
    cwd: a.dir,
    env: { ...process.env, DARKROOM_BENCH_RSS_FILE: rss.file },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const closed = new Promise<void>((r) => child.on('close', () => r()));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  try {
    const line = await new Promise<string>((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.includes('\n')) resolve(out.split('\n')[0]!);
      });
      void closed.then(() => reject(new Error('darkroom review ended before its address')));
    });
    const listening = (performance.now() - started) / 1000;
    const m = /:(\d+)\/\?token=(\S+)/.exec(line);
    if (!m) throw new Error(`no address in ${JSON.stringify(line)}`);
    const port = Number(m[1]);
    const host = { Host: `127.0.0.1:${port}` };
    const cookie = { ...host, Cookie: `darkroom-review-${port}=${m[2]}` };
    const t = performance.now();
    await get(port, `/?token=${m[2]}`, host);
    await Promise.all([get(port, '/', cookie), get(port, '/review.js', cookie), get(port, '/review.css', cookie)]);
    const list = await get(port, '/api/photos', cookie);
    if (list.status !== 200) throw new Error(`/api/photos answered ${list.status}`);
    // A list past 50 MB is not kept as text (the code before this work sends every photo at once): counted by its ids.
    const shown = list.text ? (JSON.parse(list.text) as { photos: unknown[] }).photos.length : `${list.count} ids of`;
    const firstView = (performance.now() - t) / 1000;
    child.kill('SIGINT');
    await closed;
    clearTimeout(timer);
    const peakMb = rss.read();
    return {
      command: 'review',
      photos: a.photos,
      wallS: listening + firstView,
      peakMb,
      note: `listening at ${listening.toFixed(2)} s; first view ${firstView.toFixed(2)} s (${shown} photos in its first list, ${(list.bytes / 1e6).toFixed(1)} MB)`,
    };
  } catch (err) {
    child.kill('SIGKILL');
    await closed;
    clearTimeout(timer);
    return { command: 'review', photos: a.photos, wallS: null, peakMb: rss.read(), note: String((err as Error).message) };
  } finally {
    rss.done();
  }
}

/** A command's --json output, or undefined when it is not whole JSON (the figure stands; the note says less). */
function parsed<T>(stdout: string): T | undefined {
  try {
    return JSON.parse(stdout) as T;
  } catch {
    return undefined;
  }
}

export async function measure(bin: string, a: ScaleArchive, command: Command, timeoutMs: number): Promise<CommandFigure> {
  switch (command) {
    case 'status': {
      const r = await runCli(bin, ['status', a.jobs, '--json'], a.dir, timeoutMs);
      const total = r.code === 0 || r.code === 1 ? parsed<{ total: number }>(r.stdout)?.total : null;
      return simple('status', a.photos, r, `total ${total}`);
    }
    case 'watch':
      return measureWatch(bin, a, timeoutMs);
    case 'plan': {
      const r = await runCli(bin, ['plan', a.jobs, '--json'], a.dir, timeoutMs);
      const found = r.code === 0 ? parsed<{ inputs: { found: number } }>(r.stdout)?.inputs.found : null;
      return simple('plan', a.photos, r, a.inputs ? `${found} inputs found` : 'no input files on disk: the ledger read alone');
    }
    case 'manifest': {
      const r = await runCli(bin, ['manifest', a.jobs, '--json'], a.dir, timeoutMs);
      let note = '';
      if (r.code === 0 || r.code === 1) {
        const s = parsed<{ files: number; takenNow: number; missing: unknown[] }>(r.stdout) ?? { files: 0, takenNow: 0, missing: [] };
        note = `${s.files} files listed, ${s.takenNow} hashed now, ${s.missing.length} missing`;
      }
      return simple('manifest', a.photos, r, note);
    }
    case 'report':
    case 'report-bare': {
      const out = path.join(a.dir, 'report', 'report.html');
      rmSync(path.dirname(out), { recursive: true, force: true });
      const bare = command === 'report' ? [] : ['--no-thumbs'];
      const r = await runCli(bin, ['report', a.jobs, '--out', out, ...bare], a.dir, timeoutMs);
      const size = existsSync(out) ? readFileSync(out).length : 0;
      const said = (r.stdout || r.stderr).split('\n').slice(0, 2).join('; ').replaceAll(a.dir, '.');
      return simple(command, a.photos, r, `${said} · report.html ${(size / 1e6).toFixed(1)} MB`);
    }
    case 'review':
      return measureReview(bin, a, timeoutMs);
  }
}

function ledgerFigures(a: ScaleArchive): ScaleFigures['ledgers'][number] {
  const db = new Database(a.ledger, { readonly: true });
  try {
    const pages = db.pragma('page_count', { simple: true }) as number;
    const freePages = db.pragma('freelist_count', { simple: true }) as number;
    return { photos: a.photos, bytes: sizeOnDisk(a.ledger), pages, freePages, seedS: a.seedS };
  } finally {
    db.close();
  }
}

const fmtS = (s: number | null) => (s === null ? '–' : s < 10 ? `${s.toFixed(2)} s` : `${s.toFixed(0)} s`);
const fmtMb = (m: number | null) => (m === null ? '–' : `${m.toFixed(0)} MB`);

export function printTable(now: ScaleFigures, before: ScaleFigures | null): string {
  const L = [
    '| command | photos | before: time | before: peak RSS | now: time | now: peak RSS | target | load (1 min) | now: notes |',
    '|---|---:|---:|---:|---:|---:|---|---|---|',
  ];
  for (const f of now.commands) {
    const b = before?.commands.find((x) => x.command === f.command && x.photos === f.photos);
    const bt = b ? (b.wallS === null ? b.note : fmtS(b.wallS)) : 'not measured';
    L.push(
      `| ${f.command} | ${f.photos.toLocaleString('en')} | ${bt} | ${b ? fmtMb(b.peakMb) : ''} | ${fmtS(f.wallS)} | ${fmtMb(f.peakMb)} | ${TARGETS[f.command].note} | ${f.load ? f.load.map((x) => x.toFixed(1)).join(' → ') : ''} | ${f.note} |`,
    );
  }
  for (const l of now.ledgers) {
    L.push(
      `\nledger of ${l.photos.toLocaleString('en')} photos: ${(l.bytes / 1e9).toFixed(2)} GB on disk (${l.pages} pages, ${l.freePages} free), seeded in ${l.seedS.toFixed(0)} s`,
    );
  }
  return L.join('\n');
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      photos: { type: 'string', default: '100000,1000000' },
      only: { type: 'string' },
      darkroom: { type: 'string', default: path.join(ROOT, 'bin', 'darkroom.js') },
      save: { type: 'string' },
      baseline: { type: 'string', default: path.join(ROOT, 'bench', 'scale', 'baseline.json') },
      'timeout-min': { type: 'string', default: '15' },
      fresh: { type: 'boolean', default: false },
      inputs: { type: 'boolean', default: false },
    },
  });
  const sizes = values.photos.split(',').map(Number);
  const only = (values.only?.split(',') ?? [...COMMANDS]) as Command[];
  const timeoutMs = Number(values['timeout-min']) * 60_000;
  const bin = path.resolve(values.darkroom);
  const figures: ScaleFigures = { darkroom: bin, date: new Date().toISOString().slice(0, 10), commands: [], ledgers: [] };
  for (const photos of sizes) {
    const t = performance.now();
    const a = await seedArchive(photos, { fresh: values.fresh, inputs: values.inputs, say: (s) => console.error(s) });
    console.error(`archive of ${photos} photos at ${a.dir} (${((performance.now() - t) / 1000).toFixed(0)} s)`);
    alignSchema(a.ledger, bin);
    figures.ledgers.push(ledgerFigures(a));
    for (const c of only) {
      const load = loadavg()[0]!;
      const f = { ...(await measure(bin, a, c, timeoutMs)), load: [load, loadavg()[0]!] as const };
      console.error(`  ${c}: ${fmtS(f.wallS)}, ${fmtMb(f.peakMb)} — ${f.note} (load ${f.load[0].toFixed(1)} → ${f.load[1].toFixed(1)})`);
      figures.commands.push(f);
    }
  }
  const before = existsSync(values.baseline) ? (JSON.parse(readFileSync(values.baseline, 'utf8')) as ScaleFigures) : null;
  console.log(printTable(figures, before));
  if (values.save) writeFileSync(values.save, JSON.stringify(figures, null, 2) + '\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
