import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Ledger } from '../../src/ledger/index.js';
import { startSim, type RunningSim } from '../../src/sim/server.js';
import { runCli } from '../helpers/cli.js';
import { filesUnder, makeJob, writePhoto, type TestJob } from '../helpers/job.js';
import { pixelPrint, sha256Of } from '../helpers/metadata.js';
import { simulate } from '../helpers/simulate.js';

const KEY = 'e2e-renamed-key-51c7d3';
const ENV = { DARKROOM_TEST_KEY: KEY };

/**
 * An archivist renames and moves inputs after a night's run (the scanner's IMG_0001 becomes
 * "1962 beach/…"). The next run gives each new name its output without paying again, and
 * what was written for the old names goes: the output folder and the manifest hold the
 * current names only. Never lost on the way: a file a person edited since, a photo's only
 * output (all its names gone), a decision made in review.
 */
describe('an input renamed after its photo was done', () => {
  let sim: RunningSim;
  let job: TestJob;
  afterAll(async () => {
    await sim?.close();
    job?.cleanup();
  });

  it('moves its outputs to the new name, and the manifest lists the current names only', async () => {
    job = await makeJob({
      photos: 0,
      steps: [{ capability: 'restore' }, { capability: 'enhance' }],
      extra: { output: { dir: './out', metadata: 'all', sidecar: 'json', keepIntermediates: true } },
    });
    const inp = (p: string) => path.join(job.inputDir, p);
    const out = (p: string) => path.join(job.outputDir, p);
    for (const [i, name] of ['a.jpg', 'b.jpg', 'c.jpg', 'd.jpg'].entries()) await writePhoto(inp(name), i + 1);
    // The night's run, in virtual time (the harness runs what `darkroom run` runs); the next one through the CLI.
    const night = await simulate({ job, ledger: job.ledgerFile, keys: { DARKROOM_TEST_KEY: KEY } });
    expect(night.result.exitCode).toBe(0);
    night.ledger.close();
    sim = await startSim({ keys: [KEY], seed: 4 });
    const pixelsOfA = await pixelPrint(out('a.jpg'));

    // a: renamed and moved into a folder. b: renamed, its old output edited by a person
    // since. c: accepted in review, then renamed. d: removed, no other name.
    mkdirSync(inp('1962 beach'));
    renameSync(inp('a.jpg'), inp('1962 beach/a renamed.jpg'));
    renameSync(inp('b.jpg'), inp('b2.jpg'));
    const edited = Buffer.concat([readFileSync(out('b.jpg')), Buffer.from('retouched')]);
    writeFileSync(out('b.jpg'), edited);
    renameSync(inp('c.jpg'), inp('c2.jpg'));
    rmSync(inp('d.jpg'));
    const ledger = Ledger.open(job.ledgerFile);
    const c = ledger.reviews.idOf('c.jpg')!;
    ledger.reviews.record(c, 'accept', ledger.reviews.photo(c)!.sha256);
    ledger.close();

    const second = await runCli(['run', job.jobsFile, '--base-url', sim.apiUrl], ENV);
    expect(second.code, second.stderr).toBe(0);
    expect(sim.model.audit().createsPerSource, 'nothing paid again').toEqual({});
    expect(filesUnder(job.outputDir)).toEqual([
      '1962 beach/a renamed.jpg',
      '1962 beach/a renamed.jpg.json',
      '1962 beach/a renamed.restore.jpg',
      'b.jpg',
      'b2.jpg',
      'b2.jpg.json',
      'b2.restore.jpg',
      'c2.jpg',
      'c2.jpg.json',
      'c2.restore.jpg',
      'd.jpg',
      'd.jpg.json',
      'd.restore.jpg',
    ]);
    expect(await pixelPrint(out('1962 beach/a renamed.jpg'))).toBe(pixelsOfA);
    expect(readFileSync(out('b.jpg')).equals(edited), "the person's edit is left as it is").toBe(true);
    const log = readFileSync(path.join(path.dirname(job.ledgerFile), 'darkroom.log'), 'utf8');
    expect(log).toContain(`kept ${out('b.jpg')}, written for b.jpg, which is now b2.jpg`);

    const status = await runCli(['status', job.jobsFile], ENV);
    expect(status.stdout, 'the decision follows the photo to its new name').toMatch(/^review +1 accepted · 0 rejected · 3 not reviewed/m);

    const manifest = await runCli(['manifest', job.jobsFile], ENV);
    expect(manifest.code, manifest.stderr).toBe(0);
    const lines = readFileSync(out('manifest-sha256.txt'), 'utf8').trim().split('\n');
    const listed = lines.map((l) => l.slice(66));
    expect(listed).toEqual(filesUnder(job.outputDir).filter((f) => f !== 'b.jpg' && !f.startsWith('manifest-') && f !== 'provenance.csv'));
    for (const l of lines) expect(sha256Of(out(l.slice(66)))).toBe(l.slice(0, 64));
    const csv = readFileSync(out('provenance.csv'), 'utf8');
    expect(csv).toMatch(/^1962 beach\/a renamed\.jpg,[0-9a-f]{64},1962 beach\/a renamed\.jpg,/m);
    expect(csv).not.toMatch(/^[^,]*,[^,]*,a\.jpg,/m);
    expect(existsSync(out('a.jpg'))).toBe(false);
  }, 120_000);
});
