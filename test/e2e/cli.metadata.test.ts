import { execFileSync } from 'node:child_process';
import { copyFileSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseCsv } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { fingerprintKey } from '../../src/spec/key.js';
import { startSim, type RunningSim } from '../../src/sim/server.js';
import { runCli, type CliResult } from '../helpers/cli.js';
import { makeTempDir } from '../helpers/job.js';
import { Exif, sha256Of, solid } from '../helpers/metadata.js';

/**
 * The archive's metadata through the real CLI against the simulator over loopback: what
 * `plan` promises, what `status` and the report say of each output, the manifests an
 * archive checks its copy by, and a machine without perl.
 */

const KEY = 'e2e-metadata-key-4c1f9a7b2d';
const exif = new Exif();

function writeJob(dir: string, output: Record<string, unknown> = {}): string {
  const file = path.join(dir, 'jobs.yaml');
  writeFileSync(
    file,
    stringify({
      service: { apiKeyEnv: 'DARKROOM_TEST_KEY', name: 'Example Restore API' },
      input: { dir: './photos' },
      output: { dir: './out', ...output },
      steps: [{ capability: 'restore' }],
      ledger: './state/darkroom.db',
    }),
  );
  return file;
}

/** A scan with its date and caption, one whose EXIF block is garbage, one with nothing. */
async function writePhotos(dir: string): Promise<void> {
  const p = (f: string) => path.join(dir, 'photos', f);
  await solid(p('album/rich.jpg'), 48, 32, [200, 120, 80], 'jpeg');
  await exif.write(p('album/rich.jpg'), [
    '-EXIF:DateTimeOriginal=1962:07:14 10:30:00',
    '-IPTC:Caption-Abstract=Grandma at the beach',
    '-XMP-dc:Title=The beach',
  ]);
  await solid(p('good.tmp.jpg'), 40, 30, [10, 90, 160], 'jpeg');
  const good = readFileSync(p('good.tmp.jpg'));
  const garbage = Buffer.concat([Buffer.from([0xff, 0xe1, 0x00, 0x40]), Buffer.from('Exif\0\0MM\0*'), Buffer.alloc(52, 0xee)]);
  writeFileSync(p('damaged.jpg'), Buffer.concat([good.subarray(0, 2), garbage, good.subarray(2)]));
  rmSync(p('good.tmp.jpg'));
  await solid(p('plain.png'), 40, 30, [30, 60, 90], 'png');
}

afterAll(() => exif.end());

describe("an archive job's metadata through darkroom plan, run, status, report and manifest", () => {
  let sim: RunningSim;
  let dir: string;
  let jobs: string;
  let plan: CliResult;
  let run: CliResult;
  const env = () => ({ DARKROOM_TEST_KEY: KEY });

  beforeAll(async () => {
    sim = await startSim({ keys: [KEY], seed: 3, latency: { medianMs: 300, sigma: 0.3 } });
    dir = makeTempDir('darkroom-e2e-meta-');
    await writePhotos(dir);
    jobs = writeJob(dir, { sidecar: 'both' });
    plan = await runCli(['plan', jobs, '--base-url', sim.apiUrl], env());
    run = await runCli(['run', jobs, '--base-url', sim.apiUrl, '--quiet'], env());
  }, 120_000);

  afterAll(async () => {
    await sim.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('plan says what every output will carry, and that each will say an AI altered it', () => {
    expect(plan.code).toBe(0);
    expect(plan.stdout).toMatch(
      /^metadata all: every input's EXIF, IPTC and XMP carried to its output .*trained model \(Example Restore API\) altered it.*Orientation 1, no stale thumbnail, sRGB; sidecars: <output>\.json, <output>\.xmp$/m,
    );
  });

  it('finishes every photo, the damaged one too, and marks that one "carried with a warning", saying what was not, in status and its JSON', async () => {
    expect(run.code, run.stderr).toBe(0);
    const text = await runCli(['status', jobs], env());
    expect(text.stdout).toMatch(/^metadata 1 output\(s\) without all of their input's metadata/m);
    expect(text.stdout).toMatch(
      /^ {2}damaged\.jpg: metadata carried with a warning: carried all ExifTool could read; not carried: the damaged part of the input's metadata \(Bad IFD0 directory\)$/m,
    );
    expect(text.stdout).not.toMatch(/metadata not carried/);
    const json = JSON.parse((await runCli(['status', jobs, '--json'], env())).stdout) as {
      done: number;
      metadataNotCarried: number;
      metadataNotes: { path: string; reason: string; level: string }[];
    };
    expect(json.done).toBe(3);
    expect(json.metadataNotCarried).toBe(1);
    expect(json.metadataNotes).toEqual([
      {
        path: 'damaged.jpg',
        output: path.join(dir, 'out', 'damaged.jpg'),
        reason: expect.stringMatching(/damaged part of the input's metadata \(Bad IFD0 directory\)/),
        level: 'all',
      },
    ]);
    // The run's log says so too, naming the photo.
    expect(readFileSync(path.join(dir, 'state', 'darkroom.log'), 'utf8')).toMatch(
      /metadata carried with a warning: carried all ExifTool could read; not carried: the damaged part/,
    );
  });

  it('shows in the report, per photo, the date taken and caption carried (or why not) and the AI disclosure', async () => {
    const r = await runCli(['report', jobs, '--out', path.join(dir, 'report.html')], env());
    expect(r.code, r.stderr).toBe(0);
    const html = readFileSync(path.join(dir, 'report.html'), 'utf8');
    const data = JSON.parse(html.match(/<script type="application\/json" id="photo-data">(.*?)<\/script>/s)![1]!) as {
      photos: { p: string; m: { l: string; t: string | null; c: string | null; n: string | null; s: string[] | null } | null }[];
    };
    const by = new Map(data.photos.map((x) => [x.p, x.m]));
    expect(by.get('album/rich.jpg')).toEqual({ l: 'all', t: '1962-07-14 10:30:00', c: 'Grandma at the beach', n: null, s: null });
    expect(by.get('damaged.jpg')).toMatchObject({ l: 'all', n: expect.stringMatching(/damaged/) });
    expect(by.get('plain.png')).toEqual({ l: 'all', t: null, c: null, n: null, s: null });
    expect(html).toContain('<th>Metadata</th>');
    expect(html).toContain('AI disclosed');
  });

  it('writes manifests that sha256sum -c and sha512sum -c accept, and a provenance.csv, in the output folder', async () => {
    const r = await runCli(['manifest', 'jobs.yaml'], env(), { cwd: dir });
    expect(r.code, r.stderr).toBe(0);
    // 3 outputs, each with a .json and an .xmp sidecar.
    expect(r.stdout).toMatch(/^manifest 9 files \(3 outputs\) in out\/: manifest-sha256\.txt, manifest-sha512\.txt, provenance\.csv$/m);
    expect(r.stdout).toMatch(/^check {4}cd out && sha256sum -c manifest-sha256\.txt$/m);
    const out = path.join(dir, 'out');
    const lines = readFileSync(path.join(out, 'manifest-sha256.txt'), 'utf8').trim().split('\n');
    expect(lines).toHaveLength(9);
    expect(lines.every((l) => /^[0-9a-f]{64} {2}\S/.test(l))).toBe(true);
    expect(lines.some((l) => l.endsWith('  album/rich.jpg'))).toBe(true);
    expect(lines.some((l) => /darkroom\.db|manifest|provenance/.test(l))).toBe(false);
    expect(execFileSync('sha256sum', ['-c', 'manifest-sha256.txt'], { cwd: out, encoding: 'utf8' })).toMatch(/album\/rich\.jpg: OK/);
    expect(execFileSync('sha512sum', ['-c', '--quiet', 'manifest-sha512.txt'], { cwd: out, encoding: 'utf8' })).toBe('');
    const rows = parseCsv(readFileSync(path.join(out, 'provenance.csv')), { columns: true }) as Record<string, string>[];
    expect(rows.map((x) => x.output_path).sort()).toEqual(['album/rich.jpg', 'damaged.jpg', 'plain.jpg']);
    const rich = rows.find((x) => x.output_path === 'album/rich.jpg')!;
    expect(rich).toMatchObject({
      input_path: 'album/rich.jpg',
      input_sha256: sha256Of(path.join(dir, 'photos', 'album', 'rich.jpg')),
      output_sha256: sha256Of(path.join(out, 'album', 'rich.jpg')),
      steps: 'restore',
      metadata: 'all',
    });
    expect(rich.task_ids).toMatch(/^\S+$/);
    expect(Number.isNaN(Date.parse(rich.done_at!))).toBe(false);
    expect(rows.find((x) => x.output_path === 'damaged.jpg')!.metadata).toMatch(
      /^all: carried all ExifTool could read; not carried: the damaged part of the input's metadata/,
    );
  });

  it('names an output changed or gone since it was written (exit 1), and keeps what darkroom wrote, so the check fails on it', async () => {
    const out = path.join(dir, 'out');
    copyFileSync(path.join(out, 'plain.jpg'), path.join(dir, 'plain.bak'));
    writeFileSync(path.join(out, 'plain.jpg'), Buffer.concat([readFileSync(path.join(dir, 'plain.bak')), Buffer.from([0])]));
    rmSync(path.join(out, 'damaged.jpg.json'));
    const r = await runCli(['manifest', jobs], env());
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^changed {2}plain\.jpg: not what darkroom wrote/m);
    expect(r.stdout).toMatch(/^missing {2}damaged\.jpg\.json: darkroom wrote them and they are gone/m);
    let failed = '';
    try {
      execFileSync('sha256sum', ['-c', '--quiet', 'manifest-sha256.txt'], { cwd: out, encoding: 'utf8', stdio: 'pipe' });
    } catch (err) {
      failed = String((err as { stdout?: string }).stdout);
    }
    expect(failed).toMatch(/plain\.jpg: FAILED/);
    const json = JSON.parse((await runCli(['manifest', jobs, '--json'], env())).stdout) as { changed: string[]; missing: string[] };
    expect(json).toMatchObject({ changed: ['plain.jpg'], missing: ['damaged.jpg.json'] });
  });
});

describe('a machine without perl', () => {
  it('stops a run that would carry metadata before any upload, with one line saying what to do; without metadata the job runs', async () => {
    const sim = await startSim({ keys: [KEY], seed: 4, latency: { medianMs: 200, sigma: 0.3 } });
    const dir = makeTempDir('darkroom-e2e-noperl-');
    try {
      await writePhotos(dir);
      const jobs = writeJob(dir);
      // The CLI runs node by its full path: a PATH with no perl on it is a machine without perl.
      const noPerl = { DARKROOM_TEST_KEY: KEY, PATH: path.join(dir, 'no-such-bin') };
      const r = await runCli(['run', jobs, '--base-url', sim.apiUrl, '--quiet'], noPerl);
      expect(r.code).toBe(2);
      const lines = r.stderr.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(
        /^stopped: cannot carry the photos' metadata: ExifTool needs perl, and there is no perl on PATH; install perl .*or set output\.metadata: none in jobs\.yaml .*nothing was uploaded$/,
      );
      const k = sim.model.audit().keys[fingerprintKey(KEY)];
      expect(k?.uploads ?? 0).toBe(0);
      expect(k?.creates ?? 0).toBe(0);

      writeJob(dir, { metadata: 'none' });
      const again = await runCli(['run', jobs, '--base-url', sim.apiUrl, '--quiet'], noPerl);
      expect(again.code, again.stderr).toBe(0);
      expect((await exif.read(path.join(dir, 'out', 'album', 'rich.jpg')))['XMP-iptcExt:DigitalSourceType']).toBeUndefined();
    } finally {
      await sim.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
