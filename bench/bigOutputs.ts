/**
 * Big outputs with their metadata (`npm run test:big`, `npx tsx bench/bigOutputs.ts`): the
 * real CLI against the HTTP simulator, a job of photos whose service returns some results of
 * a given size — a valid picture followed by large private ancillary PNG chunks, the shape
 * an 8K upscale of a 16-bit scan takes — and the peak resident size of darkroom and of each
 * process it starts (ExifTool's perl), read from /proc (VmHWM, sampled), with its wall time.
 *
 * The results are made large by a result host of the bench's own: the simulator's API is
 * reached through a proxy that points each result URL at it, and it serves the simulator's
 * bytes with the chunks added, streamed (nothing of the size is ever held in memory).
 *
 *   tsx bench/bigOutputs.ts [--mib 100,1024] [--levels all,basic,none]
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { stringify } from 'yaml';
import { pngChunk } from '../src/metadata/standIn.js';
import { startSim, type RunningSim } from '../src/sim/server.js';
import { descendants, memoryOf } from './metadata.js';
import { darkroomEnv } from './child.js';

const BIN = fileURLToPath(new URL('../bin/darkroom.js', import.meta.url));
const KEY = 'bench-big-outputs-key-51d0';
const MiB = 1024 * 1024;
/** Each added chunk: 8 MiB of data, a private ancillary chunk type (lower case first and second letters). */
const CHUNK = 8 * MiB;
export const BULK_TYPE = 'drPd';

/** The data of added chunk `n` of a result: a random block with the chunk's number in front, so each is its own. */
export function bulkData(block: Buffer, n: number): Buffer {
  const b = Buffer.from(block);
  b.writeUInt32BE(n, 0);
  return b;
}

/** A served result: the simulator's PNG up to its IEND, `count` chunks of CHUNK bytes, then IEND. */
interface Bulky {
  readonly head: Buffer;
  readonly count: number;
  readonly iend: Buffer;
  readonly size: number;
}

function bulkyOf(png: Buffer, size: number): Bulky {
  const iend = png.subarray(png.length - 12);
  const head = png.subarray(0, png.length - 12);
  const count = Math.max(0, Math.ceil((size - png.length) / (CHUNK + 12)));
  return { head, count, iend, size: head.length + count * (CHUNK + 12) + iend.length };
}

export interface BigService {
  readonly apiUrl: string;
  /** Result paths served, with the bytes served for each. */
  readonly served: Map<string, number>;
  /** The block the added chunks are made of (bulkData). */
  readonly block: Buffer;
  close(): Promise<void>;
}

/**
 * The simulator behind a proxy whose result URLs lead to a host that makes the i-th result
 * requested `sizes[i]` bytes (0 or absent: as the simulator serves it).
 */
export async function bigService(sim: RunningSim, sizes: readonly number[]): Promise<BigService> {
  const block = randomBytes(CHUNK);
  const order: string[] = [];
  const served = new Map<string, number>();
  const results = http.createServer((req, res) => {
    void (async () => {
      const p = req.url ?? '/';
      const upstream = await fetch(`${sim.resultUrl}${p}`);
      const png = Buffer.from(await upstream.arrayBuffer());
      if (!order.includes(p)) order.push(p);
      const want = sizes[order.indexOf(p)] ?? 0;
      if (upstream.status !== 200 || want <= png.length || !png.subarray(1, 4).equals(Buffer.from('PNG'))) {
        res.writeHead(upstream.status, { 'content-type': upstream.headers.get('content-type') ?? 'application/octet-stream' });
        res.end(png);
        return;
      }
      const b = bulkyOf(png, want);
      served.set(p, b.size);
      res.writeHead(200, { 'content-type': 'image/png', 'content-length': String(b.size) });
      const parts = function* () {
        yield b.head;
        for (let n = 0; n < b.count; n++) {
          yield pngChunk(BULK_TYPE, bulkData(block, n));
        }
        yield b.iend;
      };
      const it = parts();
      const pump = () => {
        for (;;) {
          const next = it.next();
          if (next.done) {
            res.end();
            return;
          }
          if (!res.write(next.value)) {
            res.once('drain', pump);
            return;
          }
        }
      };
      pump();
    })().catch(() => res.destroy());
  });
  await new Promise<void>((r) => results.listen(0, '127.0.0.1', r));
  const resultOrigin = `http://127.0.0.1:${(results.address() as { port: number }).port}`;
  // The API, with each result URL pointed at the host above.
  const api = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        const headers: Record<string, string> = {};
        const hop = new Set(['host', 'connection', 'content-length', 'transfer-encoding', 'keep-alive', 'expect']);
        for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string' && !hop.has(k)) headers[k] = v;
        const body = Buffer.concat(chunks);
        const up = await fetch(`${sim.apiUrl}${req.url ?? '/'}`, {
          method: req.method ?? 'GET',
          headers,
          ...(body.length > 0 ? { body } : {}),
          redirect: 'manual',
        });
        const text = Buffer.from((await up.text()).split(`${sim.resultUrl}/results/`).join(`${resultOrigin}/results/`));
        const out: Record<string, string> = {};
        up.headers.forEach((v, k) => {
          if (k !== 'content-length' && k !== 'content-encoding' && k !== 'transfer-encoding' && k !== 'connection') out[k] = v;
        });
        res.writeHead(up.status, { ...out, 'content-length': String(text.length) });
        res.end(text);
      })().catch((err: unknown) => {
        process.stderr.write(`bigService: ${String(err)}\n`);
        res.destroy();
      });
    });
  });
  await new Promise<void>((r) => api.listen(0, '127.0.0.1', r));
  const close = (s: http.Server) =>
    new Promise<void>((r) => {
      s.closeAllConnections();
      s.close(() => r());
    });
  return {
    apiUrl: `http://127.0.0.1:${(api.address() as { port: number }).port}`,
    served,
    block,
    close: async () => {
      await Promise.all([close(api), close(results)]);
    },
  };
}

export interface BigRun {
  readonly level: 'all' | 'basic' | 'none';
  readonly exitCode: number | null;
  readonly stderr: string;
  readonly wallS: number;
  /** darkroom's own peak resident size (VmHWM), MB. */
  readonly darkroomPeakMb: number;
  /** What darkroom passed to write(2), MB (/proc/pid/io wchar, last sampled): its outputs, the ledger, the log, ExifTool's pipe. */
  readonly darkroomWrittenMb: number;
  /** darkroom's CPU time, user and system, s (/proc/pid/stat, last sampled): less swayed by the machine's other work than wall time. */
  readonly darkroomCpuS: number;
  /** Each process darkroom started, by pid: its command and peak resident size seen (VmHWM), MB. */
  readonly children: readonly { readonly pid: number; readonly command: string; readonly peakMb: number }[];
  /** The job's folder: photos/, out/, state/. */
  readonly dir: string;
}

/** `n` photos of 64×48, each its own colour, with a scan's caption and keywords (XMP, in the PNG). */
export async function writeBigPhotos(dir: string, n: number): Promise<void> {
  mkdirSync(dir, { recursive: true });
  for (let i = 0; i < n; i++) {
    const file = path.join(dir, `scan-${i}.png`);
    await sharp({ create: { width: 64, height: 48, channels: 3, background: { r: 40 * i, g: 100, b: 200 - 30 * i } } })
      .png()
      .withXmp(
        `<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:description><rdf:Alt><rdf:li xml:lang="x-default">Scan ${i} of the family box</rdf:li></rdf:Alt></dc:description><dc:subject><rdf:Bag><rdf:li>family</rdf:li></rdf:Bag></dc:subject></rdf:Description></rdf:RDF></x:xmpmeta>`,
      )
      .toFile(file);
  }
}

/** Bytes a process has passed to write(2), and its CPU seconds (clock ticks at the usual 100 a second); zeros once it is gone. */
function useOf(pid: number): { wchar: number; cpuS: number } {
  try {
    const wchar = Number(/^wchar:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/io`, 'utf8'))?.[1] ?? 0);
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8')
      .replace(/^.*\) /s, '')
      .split(' ');
    return { wchar, cpuS: (Number(f[11]) + Number(f[12])) / 100 };
  } catch {
    return { wchar: 0, cpuS: 0 };
  }
}

function commandOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).slice(0, 2).join(' ').slice(0, 80);
  } catch {
    return '?';
  }
}

/** One run of the job in `dir` (photos under it) through the CLI, its memory sampled every 50 ms. */
export async function runBig(root: string, photos: string, apiUrl: string, level: BigRun['level']): Promise<BigRun> {
  const dir = mkdtempSync(path.join(root, `run-${level}-`));
  const jobs = path.join(dir, 'jobs.yaml');
  writeFileSync(
    jobs,
    stringify({
      service: { apiKeyEnv: 'DARKROOM_API_KEY' },
      input: { dir: photos },
      output: { dir: './out', metadata: level },
      steps: [{ capability: 'enhance' }],
      ledger: './state/darkroom.db',
    }),
  );
  const started = performance.now();
  const child = spawn(process.execPath, [BIN, 'run', jobs, '--base-url', apiUrl, '--quiet'], {
    env: darkroomEnv(KEY, path.join(dir, 'keys'), { TMPDIR: process.env.TMPDIR ?? tmpdir() }),
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  let peak = 0;
  let written = 0;
  let cpu = 0;
  const children = new Map<number, { command: string; peakKb: number }>();
  const sample = () => {
    peak = Math.max(peak, memoryOf(child.pid!).hwm);
    const use = useOf(child.pid!);
    written = Math.max(written, use.wchar);
    cpu = Math.max(cpu, use.cpuS);
    for (const pid of descendants(child.pid!)) {
      const m = memoryOf(pid).hwm;
      const c = children.get(pid) ?? { command: commandOf(pid), peakKb: 0 };
      c.peakKb = Math.max(c.peakKb, m);
      children.set(pid, c);
    }
  };
  const timer = setInterval(sample, 50);
  const exitCode = await new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  clearInterval(timer);
  return {
    level,
    exitCode,
    stderr,
    wallS: (performance.now() - started) / 1000,
    darkroomPeakMb: peak / 1024,
    darkroomWrittenMb: written / MiB,
    darkroomCpuS: cpu,
    children: [...children].map(([pid, c]) => ({ pid, command: c.command, peakMb: c.peakKb / 1024 })),
    dir,
  };
}

/** A simulator for the big runs: fast tasks, the input's bytes as the result (passthrough), limits out of the way. */
export function bigSim(): Promise<RunningSim> {
  return startSim({
    keys: [KEY],
    seed: 11,
    processing: 'passthrough',
    latency: { kind: 'uniform', minMs: 50, maxMs: 150 },
    limits: { callsPerMinute: 1_000_000, callsPerHour: 10_000_000, activeTasks: 3 },
  });
}

/** The bench's rows: per output size and level, a job of 4 photos of which 2 come back at that size. */
async function measureBigOutputs(opts: { mib: readonly number[]; levels: readonly BigRun['level'][] }): Promise<string[]> {
  const rows = [
    '| outputs | metadata | wall s | darkroom CPU s | darkroom wrote MB | darkroom peak RSS MB | largest child peak RSS MB (ExifTool) |',
    '|---|---|---:|---:|---:|---:|---:|',
  ];
  const root = mkdtempSync(path.join(tmpdir(), 'darkroom-bench-big-'));
  const sim = await bigSim();
  try {
    const photos = path.join(root, 'photos');
    await writeBigPhotos(photos, 4);
    for (const mib of opts.mib) {
      for (const level of opts.levels) {
        const svc = await bigService(sim, [mib * MiB, mib * MiB]);
        try {
          const r = await runBig(root, photos, svc.apiUrl, level);
          const child = Math.max(0, ...r.children.map((c) => c.peakMb));
          rows.push(
            `| 2 of 4 at ${mib} MiB | ${level} | ${r.wallS.toFixed(1)} | ${r.darkroomCpuS.toFixed(1)} | ${r.darkroomWrittenMb.toFixed(0)} | ${r.darkroomPeakMb.toFixed(0)} | ${r.children.length ? child.toFixed(0) : '–'} |${r.exitCode === 0 ? '' : ` exit ${r.exitCode}`}`,
          );
          process.stderr.write(`${rows.at(-1)}\n`);
          rmSync(r.dir, { recursive: true, force: true });
        } finally {
          await svc.close();
        }
      }
    }
  } finally {
    await sim.close();
    rmSync(root, { recursive: true, force: true });
  }
  return rows;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const opt = (name: string, dflt: string) => {
    const i = args.indexOf(name);
    return (i >= 0 ? args[i + 1]! : dflt).split(',');
  };
  const rows = await measureBigOutputs({
    mib: opt('--mib', '100,1024').map(Number),
    levels: opt('--levels', 'none,basic,all') as BigRun['level'][],
  });
  console.log(rows.join('\n'));
}
