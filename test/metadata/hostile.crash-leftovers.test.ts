import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { stringify } from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { startSim, type RunningSim } from '../../src/sim/server.js';
import { runCli } from '../helpers/cli.js';
import { makeJob } from '../helpers/job.js';
import { Exif, solid } from '../helpers/metadata.js';

/**
 * kill -9 at the worst instant of the metadata write (DARKROOM_CRASH_AT=download:1: ExifTool
 * has written its file, it is not yet renamed into place), then a rerun to the end. The
 * outputs are whole with their metadata and no `.darkroom-tmp` is left (the crash tests
 * check that); but the killed run's ExifTool scratch folder (`$TMPDIR/darkroom-exiftool-*`,
 * with its links to the output folder and any sidecar in the making) is never removed by
 * anyone: one more per kill, for ever. Low severity, but "no temp file left" is the promise.
 */
const KEY = 'hostile-crash-key-7e2a';
const exif = new Exif();
const cleanups: (() => void | Promise<void>)[] = [];
let sim: RunningSim | undefined;
afterAll(async () => {
  while (cleanups.length) await cleanups.pop()!();
  await sim?.close();
  await exif.end();
});

describe('a run killed during the metadata write, then run again', () => {
  it('leaves no ExifTool scratch folder behind in TMPDIR', async () => {
    sim = await startSim({ keys: [KEY], seed: 5, latency: { medianMs: 150, sigma: 0.2 } });
    const job = await makeJob({ photos: 0, steps: [{ capability: 'restore' }] });
    cleanups.push(job.cleanup);
    for (let i = 0; i < 3; i++) {
      const f = path.join(job.inputDir, `scan-${i}.jpg`);
      await solid(f, 64, 48, [40 * i, 80, 60], 'jpeg');
      await exif.write(f, [`-XMP-dc:Title=photo ${i}`]);
    }
    writeFileSync(
      job.jobsFile,
      stringify({
        service: { apiKeyEnv: 'DARKROOM_TEST_KEY' },
        input: { dir: './photos' },
        output: { dir: './out', metadata: 'all', sidecar: 'xmp' },
        steps: [{ capability: 'restore' }],
        ledger: './state/darkroom.db',
      }),
    );
    const tmp = path.join(job.dir, 'tmp');
    mkdirSync(tmp);
    const env = { DARKROOM_TEST_KEY: KEY, TMPDIR: tmp };
    const killed = await runCli(['run', job.jobsFile, '--base-url', sim.apiUrl, '--quiet'], { ...env, DARKROOM_CRASH_AT: 'download:1' });
    expect(killed.signal).toBe('SIGKILL');
    const rerun = await runCli(['run', job.jobsFile, '--base-url', sim.apiUrl, '--quiet'], env);
    expect(rerun.code, rerun.stdout + rerun.stderr).toBe(0);
    for (let i = 0; i < 3; i++) expect((await exif.read(path.join(job.outputDir, `scan-${i}.jpg`)))['XMP-dc:Title']).toBe(`photo ${i}`);
    expect(readdirSync(job.outputDir).filter((f) => f.endsWith('.darkroom-tmp'))).toEqual([]);
    expect(readdirSync(tmp).filter((f) => f.startsWith('darkroom-exiftool-'))).toEqual([]);
  }, 120_000);
});
