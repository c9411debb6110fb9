/**
 * The two ledger measurements of issue 3, on 100,000 items:
 * - `darkroom status` on a big ledger answers in under 0.5 s;
 * - discovering and recording 100,000 small files takes under 60 s.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import type Database from 'better-sqlite3';
import { statusCommand } from '../src/cli/commands/status.js';
import { loadConfig } from '../src/config/index.js';
import { Ledger, type ItemState } from '../src/ledger/index.js';
import { discoverInto, newCounts } from '../src/inputs/discover.js';
import { OutputWriter } from '../src/outputs/writer.js';
import { silentLogger } from '../src/log.js';
import { discovered } from '../test/helpers/discovered.js';
import { writePhotos } from './photos.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const LEDGER_ITEMS = 100_000;

export interface StatusFigures {
  readonly items: number;
  readonly calls: number;
  /** Seconds to build the ledger (not a target, for context). */
  readonly buildS: number;
  /** `statusCommand` in this process, ledger opened cold. */
  readonly inProcessS: number;
  /** `node bin/darkroom.js status --ledger F --json` end to end, process start included; null without dist/. */
  readonly cliS: number | null;
  readonly cliNote: string | null;
}

export interface DiscoverFigures {
  readonly files: number;
  /** Seconds to write the files (not a target). */
  readonly writeS: number;
  /** Seconds the batches spent looking at, hashing and decoding the files (the walk goes on beside them). */
  readonly discoverS: number;
  /** The rest: recording the batches, naming their outputs, and the end of the discovery. */
  readonly recordS: number;
  readonly totalS: number;
}

/**
 * Each Ledger write is its own fsynced transaction (synchronous=FULL): ~0.4 ms apiece here,
 * so the 330,000 writes of this ledger would take minutes. Building it in one transaction
 * keeps the bench short; better-sqlite3 nests the Ledger's own transactions as savepoints.
 * The Ledger exposes no batch API, so this reaches its private handle — bench only.
 */
function inOneTransaction(ledger: Ledger, fn: () => void): void {
  (ledger as unknown as { db: Database.Database }).db.transaction(fn)();
}

const DONE_PATH: ItemState[] = ['queued', 'uploading', 'uploaded', 'submitting', 'active', 'succeeded', 'downloading', 'done'];

function walk(ledger: Ledger, id: number, states: readonly ItemState[], last: Record<string, unknown> = {}): void {
  for (let i = 1; i < states.length; i++) {
    ledger.items.move(id, states[i - 1]!, states[i]!, i === states.length - 1 ? last : { key_fp: 'bench-key-fp' });
  }
}

/** A night's ledger halfway: 40% done, 1% failed, some held and active, the rest queued, 130,000 calls logged. */
function buildBigLedger(file: string, items = LEDGER_ITEMS): { calls: number } {
  const ledger = Ledger.open(file);
  const now = Date.now();
  const calls = Math.round(items * 1.3);
  try {
    inOneTransaction(ledger, () => {
      // Recorded as a run's discovery records them (ledger/discovery.ts), each its own content.
      discovered(
        ledger,
        Array.from({ length: items }, (_, i) => ({
          relPath: `box-${Math.floor(i / 100)}/photo-${i}.png`,
          srcPath: `/archive/box-${Math.floor(i / 100)}/photo-${i}.png`,
          sizeBytes: 2_000_000,
        })),
      );
      const done = Math.round(items * 0.4);
      const failed = Math.round(items * 0.01);
      const held = Math.round(items * 0.002);
      let id = 1;
      for (let n = 0; n < done; n++) walk(ledger, id++, DONE_PATH, { output_path: `/out/photo-${id}.png` });
      for (let n = 0; n < failed; n++)
        walk(ledger, id++, [...DONE_PATH.slice(0, 5), 'failed'], { reason: 'enhance ended FAIL on all 3 attempts' });
      for (let n = 0; n < held; n++) walk(ledger, id++, [...DONE_PATH.slice(0, 4), 'held'], { reason: 'create outcome unknown' });
      for (let n = 0; n < 3; n++) walk(ledger, id++, DONE_PATH.slice(0, 5));
      for (let n = 0; n < calls; n++) {
        ledger.calls.log({
          at_ms: now - (calls - n) * 3_600, // 1,000 an hour, up to now
          key_fp: 'bench-key-fp',
          method: n % 3 === 0 ? 'POST' : 'GET',
          endpoint: n % 3 === 0 ? '/api/v1/image/upload' : '/api/v1/tasks/{businessType}/{taskId}',
          http_status: 200,
          code: 0,
          request_id: `r${n}`,
          sent_request_id: `s${n}`,
          duration_ms: 120,
          error: null,
        });
      }
    });
  } finally {
    ledger.close();
  }
  return { calls };
}

export async function measureStatus(items = LEDGER_ITEMS): Promise<StatusFigures> {
  const dir = mkdtempSync(path.join(tmpdir(), 'darkroom-bench-status-'));
  try {
    const file = path.join(dir, 'darkroom.db');
    let t = performance.now();
    const { calls } = buildBigLedger(file, items);
    const buildS = (performance.now() - t) / 1000;

    t = performance.now();
    const out = JSON.parse(await statusCommand({ ledger: file, json: true }, {})) as { total: number };
    const inProcessS = (performance.now() - t) / 1000;
    if (out.total !== items) throw new Error(`status counted ${out.total} items, expected ${items}`);

    let cliS: number | null = null;
    let cliNote: string | null = null;
    if (!existsSync(path.join(ROOT, 'dist', 'cli', 'entry.js'))) {
      cliNote = 'dist/ missing: run `npm run build` to time the CLI';
    } else {
      t = performance.now();
      const r = spawnSync(process.execPath, [path.join(ROOT, 'bin', 'darkroom.js'), 'status', '--ledger', file, '--json'], {
        encoding: 'utf8',
      });
      cliS = (performance.now() - t) / 1000;
      if (r.status !== 0) cliNote = `exit ${r.status}: ${r.stderr.trim().split('\n')[0] ?? ''}`;
      else if ((JSON.parse(r.stdout) as { total: number }).total !== items) cliNote = 'CLI counted a different total';
    }
    return { items, calls, buildS, inProcessS, cliS, cliNote };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function measureDiscover(files = LEDGER_ITEMS): Promise<DiscoverFigures> {
  const dir = mkdtempSync(path.join(tmpdir(), 'darkroom-bench-discover-'));
  try {
    let t = performance.now();
    writePhotos(path.join(dir, 'photos'), files);
    const writeS = (performance.now() - t) / 1000;
    const jobsFile = path.join(dir, 'jobs.yaml');
    writeFileSync(jobsFile, 'input: { dir: ./photos }\noutput: { dir: ./out }\nsteps: [{ capability: enhance }]\nledger: ./darkroom.db\n');

    // A run's own discovery (inputs/discover.ts discoverInto, as the runner's discover phase calls it):
    // found, hashed and checked, recorded a batch at a time with each batch's output names
    // (outputs/writer.ts afterBatch), then what only the whole walk tells (afterDiscovery). The
    // batches' looking, hashing and decoding is counted apart (counts.decodes.ms): the rest is recording.
    t = performance.now();
    const config = loadConfig(jobsFile, { env: {} });
    const ledger = Ledger.open(config.ledger);
    const counts = newCounts();
    try {
      const writer = new OutputWriter(config, ledger, silentLogger());
      const { identity } = await discoverInto(config, ledger, {
        keyFps: [],
        counts,
        onBatch: (batch, pass) => writer.afterBatch({ ids: batch.inputIds, gen: pass.gen }),
      });
      await writer.afterDiscovery();
      if (identity.added !== files) throw new Error(`recorded ${identity.added} of ${files} files`);
    } finally {
      ledger.close();
    }
    const totalS = (performance.now() - t) / 1000;
    const discoverS = counts.decodes.ms / 1000;
    const recordS = totalS - discoverS;
    return { files, writeS, discoverS, recordS, totalS };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
