import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Ledger } from '../../src/ledger/index.js';
import { ExifToolProcess } from '../../src/metadata/exiftool.js';
import { DIGITAL_SOURCE_TYPE } from '../../src/metadata/tags.js';
import { makeJob } from '../helpers/job.js';
import { Exif, solid } from '../helpers/metadata.js';
import { simulate } from '../helpers/simulate.js';

/**
 * Hostile machine: the ExifTool process dies under darkroom (the OOM killer picks the perl
 * process on a busy night, an admin's `pkill perl`, the 120 s task timeout on an overloaded
 * 2-core box ends it). That is a passing failure of the tool, not of the photo's metadata:
 * the output must still carry its input's metadata, and at the very least the AI
 * disclosure. Today the write is not retried (taskRetries: 0) and the photo is settled
 * for good as "metadata not carried", its output the service's bytes with no word of AI.
 */
const exif = new Exif();
const cleanups: (() => void)[] = [];
afterAll(async () => {
  while (cleanups.length) cleanups.pop()!();
  await exif.end();
});

/** The perl processes this process started (ExifTool, behind darkroom's watchdog exec). */
function perlChildren(): number[] {
  const out = execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(process.pid)]).toString();
  return out
    .split('\n')
    .filter((l) => /exiftool/.test(l))
    .map((l) => Number(l.trim().split(/\s+/)[0]))
    .filter((n) => Number.isInteger(n) && n > 0);
}

describe('ExifTool killed during a run', () => {
  it('the photo whose write met the dead process still gets its metadata and the AI disclosure', async () => {
    const job = await makeJob({ photos: 0, steps: [{ capability: 'restore' }], extra: { output: { dir: './out', metadata: 'all' } } });
    cleanups.push(job.cleanup);
    const file = path.join(job.inputDir, 'scan.jpg');
    await solid(file, 64, 48, [120, 80, 60], 'jpeg');
    await exif.write(file, ['-XMP-dc:Title=The beach', '-EXIF:DateTimeOriginal=1962:07:14 10:30:00']);
    const mine = new Set(perlChildren()); // the test's own ExifTool
    const ledger = Ledger.open(job.ledgerFile);
    cleanups.push(() => ledger.close());
    // The kill lands while darkroom's copy of the input's tags onto the output is in flight
    // (as an OOM kill or the task timeout would): the command is sent, then the process dies.
    let killed = 0;
    const original = ExifToolProcess.prototype.run;
    ExifToolProcess.prototype.run = function (this: ExifToolProcess, args: readonly string[]) {
      const p = original.call(this, args);
      if (killed === 0 && args.includes('-tagsFromFile') && args.includes('-o')) {
        for (const pid of perlChildren()) {
          if (mine.has(pid)) continue;
          process.kill(pid, 'SIGKILL');
          killed++;
        }
      }
      return p;
    };
    cleanups.push(() => (ExifToolProcess.prototype.run = original));
    await simulate({ job, ledger, sim: { processing: 'sharp' } });
    expect(killed).toBeGreaterThan(0);
    const out = ledger.items.all()[0]!.output_path!;
    const t = await exif.read(out);
    console.log('recorded:', JSON.stringify(ledger.outputFiles.fileMetadata(out)).slice(0, 300));
    expect(t['XMP-iptcExt:DigitalSourceType'], 'no AI disclosure on the output').toBe(DIGITAL_SOURCE_TYPE);
    expect(t['XMP-dc:Title']).toBe('The beach');
  }, 120_000);
});
