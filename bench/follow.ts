/**
 * `npm run bench:follow`: what following costs when nothing happens. A folder of 100,000
 * photos already done (100 folders; recorded by the run's real discovery, then marked done in
 * one transaction), `darkroom run --follow --quiet` against the HTTP simulator, and, once it
 * follows, its CPU time and memory read from /proc over a minute or more. Targets: under 2 % of
 * one core and under 300 MB RSS (docs/performance.md § Following a folder).
 *
 *   tsx bench/follow.ts [--photos 100000] [--seconds 60] [--how events|poll] [--keep DIR] [--cpu-prof DIR]
 *
 * --cpu-prof DIR: the run is started under `node --cpu-prof`, its profile written to DIR when
 * it ends; the idle minute is the profile's last `seconds` (open it in Chrome's DevTools).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type Database from 'better-sqlite3';
import { loadConfig } from '../src/config/index.js';
import { discoverInto } from '../src/inputs/discover.js';
import { Ledger } from '../src/ledger/index.js';
import { silentLogger } from '../src/log.js';
import { OutputWriter } from '../src/outputs/writer.js';
import { stampNewPhotos } from '../src/run/stepsCheck.js';
import { startSim } from '../src/sim/server.js';
import { writePhotos } from './photos.js';
import { darkroomEnv } from './child.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const KEY = 'bench-follow-key-0123456789';
const TICKS = 100; // USER_HZ on Linux

const { values } = parseArgs({
  options: {
    photos: { type: 'string', default: '100000' },
    seconds: { type: 'string', default: '60' },
    how: { type: 'string', default: 'events' },
    keep: { type: 'string' },
    'cpu-prof': { type: 'string' },
  },
});
const photos = Number(values.photos);
const seconds = Number(values.seconds);
const how = values.how === 'poll' ? 'poll' : 'events';

/** A job folder of `photos` photos, every one recorded and done (made once; kept with --keep). */
async function prepare(dir: string): Promise<string> {
  const jobsFile = path.join(dir, 'jobs.yaml');
  writeFileSync(
    jobsFile,
    [
      'service: { apiKeyEnv: DARKROOM_API_KEY }',
      `input: { dir: ./photos, watch: ${how}, poll: 30, settle: 10 }`,
      'output: { dir: ./out, metadata: none }',
      'steps: [{ capability: enhance }]',
      'ledger: ./darkroom.db',
      '',
    ].join('\n'),
  );
  if (existsSync(path.join(dir, 'darkroom.db'))) return jobsFile;
  writePhotos(path.join(dir, 'photos'), photos);
  const config = loadConfig(jobsFile, { env: {} });
  const ledger = Ledger.open(config.ledger);
  try {
    await discoverInto(config, ledger, { keyFps: [] });
    await new OutputWriter(config, ledger, silentLogger()).afterDiscovery();
    // Stamped with the job's steps, as a run stamps each batch it records.
    stampNewPhotos(config, ledger);
    // Done, as a finished night leaves them (outputs named, no call needed): in one transaction,
    // through the Ledger's private handle — bench only, as bench/ledger.ts builds its big ledger.
    const db = (ledger as unknown as { db: Database.Database }).db;
    db.transaction(() => {
      db.prepare("UPDATE items SET state = 'done'").run();
      db.prepare("UPDATE inputs SET output_path = ? || '/' || out_dir || '/' || out_name || '.png', written_ms = ?").run(
        config.output.dir,
        Date.now(),
      );
    })();
  } finally {
    ledger.close();
  }
  return jobsFile;
}

function procStat(pid: number): { cpuS: number; rssMB: number; peakMB: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const cpuS = (Number(fields[11]) + Number(fields[12])) / TICKS;
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
  return { cpuS, rssMB: kb('VmRSS') / 1024, peakMB: kb('VmHWM') / 1024 };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main(): Promise<void> {
  const dir = values.keep ?? mkdtempSync(path.join(tmpdir(), 'darkroom-bench-follow-'));
  mkdirSync(dir, { recursive: true });
  const sim = await startSim({ keys: [KEY], seed: 1 });
  try {
    let t = Date.now();
    const jobsFile = await prepare(dir);
    const prepS = (Date.now() - t) / 1000;
    t = Date.now();
    const log = path.join(dir, 'darkroom.log');
    // A kept folder's log has earlier runs': only what this one writes counts.
    const before = existsSync(log) ? readFileSync(log).length : 0;
    const child = spawn(
      process.execPath,
      [
        ...(values['cpu-prof'] === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${path.resolve(values['cpu-prof'])}`]),
        path.join(ROOT, 'bin/darkroom.js'),
        ...['run', jobsFile, '--follow', '--quiet', '--base-url', sim.apiUrl],
      ],
      {
        env: darkroomEnv(KEY, path.join(dir, 'state')),
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    // Following once the log says so (the watcher ready, every folder listed once).
    while (!(existsSync(log) && readFileSync(log).subarray(before).toString('utf8').includes('"following '))) {
      if (child.exitCode !== null) throw new Error(`the run ended: ${stderr}`);
      await sleep(200);
    }
    const startS = (Date.now() - t) / 1000;
    // A few seconds for the start's garbage to be collected, then the idle minute.
    await sleep(5_000);
    const a = procStat(child.pid!);
    const t0 = Date.now();
    let maxRss = a.rssMB;
    while (Date.now() - t0 < seconds * 1000) {
      await sleep(1000);
      maxRss = Math.max(maxRss, procStat(child.pid!).rssMB);
    }
    const b = procStat(child.pid!);
    const wallS = (Date.now() - t0) / 1000;
    child.kill('SIGINT');
    await new Promise((r) => child.once('exit', r));
    const cpuPct = ((b.cpuS - a.cpuS) / wallS) * 100;
    console.log(`following ${photos.toLocaleString('en')} photos already done (${how}), idle for ${wallS.toFixed(0)} s:`);
    console.log(`  ledger and folder made in ${prepS.toFixed(1)} s; following ${startS.toFixed(1)} s after the start`);
    console.log(`  CPU   ${cpuPct.toFixed(2)} % of one core   (target < 2 %)`);
    console.log(
      `  RSS   ${maxRss.toFixed(0)} MB at most while idle   (target < 300 MB); peak of the whole process ${b.peakMB.toFixed(0)} MB`,
    );
    console.log(JSON.stringify({ photos, how, seconds: wallS, cpuPct, idleRssMB: maxRss, peakRssMB: b.peakMB, startS }));
  } finally {
    await sim.close();
    if (values.keep === undefined) rmSync(dir, { recursive: true, force: true });
  }
}

await main();
