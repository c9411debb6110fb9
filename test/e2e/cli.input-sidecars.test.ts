import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseCsv } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { startSim, type RunningSim } from '../../src/sim/server.js';
import { sidecarNames } from '../../src/metadata/sidecars.js';
import { runCli, type CliResult } from '../helpers/cli.js';
import { makeTempDir } from '../helpers/job.js';
import { Exif, solid } from '../helpers/metadata.js';

/**
 * The archive's own XMP sidecars through the real CLI: a TIFF master with Lightroom's
 * `scan.xmp`, one with darktable's `scan.tif.xmp`, one with both, one whose sidecar is not
 * XMP. The outputs carry the sidecar's caption and keywords over the master's own; `plan`
 * counts the inputs with one, the report and provenance.csv say which was read, and the
 * malformed one is a warning naming it, its photo done.
 */

const KEY = 'e2e-sidecars-key-8d2e0b7c11';
const exif = new Exif();

/** An XMP sidecar as Lightroom or darktable writes one: a caption, keywords, a rating, and (darktable) its develop history. */
function xmp(caption: string, keywords: readonly string[], darktable = false): string {
  return `<?xpacket begin="\uFEFF" id="W5M0MpCehiHzreSzNTczkc9d"?>
<x:xmpmeta xmlns:x="adobe:ns:meta/">
 <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
  <rdf:Description rdf:about=""
    xmlns:dc="http://purl.org/dc/elements/1.1/"
    xmlns:xmp="http://ns.adobe.com/xap/1.0/"${darktable ? '\n    xmlns:darktable="http://darktable.sf.net/"\n    darktable:xmp_version="5"' : ''}
    xmp:Rating="4">
   <dc:description><rdf:Alt><rdf:li xml:lang="x-default">${caption}</rdf:li></rdf:Alt></dc:description>
   <dc:subject><rdf:Bag>${keywords.map((k) => `<rdf:li>${k}</rdf:li>`).join('')}</rdf:Bag></dc:subject>${
     darktable
       ? '\n   <darktable:history><rdf:Seq><rdf:li darktable:operation="exposure" darktable:enabled="1"/></rdf:Seq></darktable:history>'
       : ''
   }
  </rdf:Description>
 </rdf:RDF>
</x:xmpmeta>
<?xpacket end="w"?>
`;
}

let sim: RunningSim;
let dir: string;
let jobs: string;
let plan: CliResult;
let run: CliResult;
const env = () => ({ DARKROOM_TEST_KEY: KEY });

beforeAll(async () => {
  sim = await startSim({ keys: [KEY], seed: 5, latency: { medianMs: 200, sigma: 0.3 } });
  dir = makeTempDir('darkroom-e2e-sidecars-');
  const p = (f: string) => path.join(dir, 'photos', f);
  for (const [name, rgb] of [
    ['lr', [200, 120, 80]],
    ['dt', [80, 160, 200]],
    ['both', [120, 200, 80]],
    ['bad', [60, 60, 60]],
  ] as const) {
    await solid(p(`${name}.tif`), 48, 32, [...rgb], 'tiff');
    await exif.write(p(`${name}.tif`), [
      '-EXIF:DateTimeOriginal=1962:07:14 10:30:00',
      '-IPTC:Caption-Abstract=the master says',
      '-XMP-dc:Description=the master says',
      '-XMP-dc:Subject=embedded',
    ]);
  }
  writeFileSync(p('lr.xmp'), xmp('Grandma at the beach (Lightroom)', ['beach', 'grandma']));
  writeFileSync(p('dt.tif.xmp'), xmp('Grandpa on the pier (darktable)', ['pier'], true));
  writeFileSync(p('both.XMP'), xmp('what Lightroom says', ['lightroom']));
  writeFileSync(p('both.TIF.xmp'), xmp('what darktable says', ['darktable'], true));
  writeFileSync(p('bad.xmp'), xmp('never read', ['never']).slice(0, 300));
  jobs = path.join(dir, 'jobs.yaml');
  writeFileSync(
    jobs,
    stringify({
      service: { apiKeyEnv: 'DARKROOM_TEST_KEY', name: 'Example Restore API' },
      input: { dir: './photos' },
      output: { dir: './out' },
      steps: [{ capability: 'restore' }],
      ledger: './state/darkroom.db',
    }),
  );
  plan = await runCli(['plan', jobs, '--base-url', sim.apiUrl], env());
  run = await runCli(['run', jobs, '--base-url', sim.apiUrl], env());
}, 120_000);

afterAll(async () => {
  await sim.close();
  await exif.end();
  rmSync(dir, { recursive: true, force: true });
});

describe("an archive's own XMP sidecars", () => {
  it('are found under both names, the case of either extension ignored, the name with the extension read last', () => {
    const names = ['scan.tif', 'scan.XMP', 'scan.TIF.xmp', 'scan.tif.xmp.bak', 'scanner.xmp', 'scan.jpg.xmp', 'Scan.xmp'];
    expect(sidecarNames('scan.tif', names)).toEqual(['scan.XMP', 'scan.TIF.xmp']);
    expect(sidecarNames('scan.jpg', names)).toEqual(['scan.XMP', 'scan.jpg.xmp']);
    expect(sidecarNames('scan', ['scan.xmp'])).toEqual(['scan.xmp']);
  });

  it('are counted by plan', () => {
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stdout).toMatch(/; 4 input\(s\) with an XMP sidecar of their own \(name\.xmp, name\.ext\.xmp\) merged into their outputs/);
  });

  it("give the output the sidecar's caption and keywords over the master's, in EXIF, IPTC and XMP alike", async () => {
    expect(run.code, run.stderr).toBe(0);
    const out = (f: string) => path.join(dir, 'out', f);
    const lr = await exif.read(out('lr.jpg'));
    expect(lr['XMP-dc:Description']).toBe('Grandma at the beach (Lightroom)');
    expect(lr['IPTC:Caption-Abstract']).toBe('Grandma at the beach (Lightroom)');
    expect(lr['IFD0:ImageDescription']).toBe('Grandma at the beach (Lightroom)');
    expect(lr['XMP-dc:Subject']).toEqual(['beach', 'grandma']);
    expect(lr['IPTC:Keywords']).toEqual(['beach', 'grandma']);
    expect(lr['XMP-xmp:Rating']).toBe(4);
    // What only the master states is kept.
    expect(lr['ExifIFD:DateTimeOriginal']).toBe('1962:07:14 10:30:00');
    const dt = await exif.read(out('dt.jpg'));
    expect(dt['XMP-dc:Description']).toBe('Grandpa on the pier (darktable)');
    expect(dt['IPTC:Keywords']).toBe('pier');
    // A raw developer's history describes edits to the master: never carried.
    expect(Object.keys(dt).filter((k) => k.startsWith('XMP-darktable:'))).toEqual([]);
    const both = await exif.read(out('both.jpg'));
    expect(both['XMP-dc:Description']).toBe('what darktable says');
    expect(both['IPTC:Keywords']).toBe('darktable');
  });

  it("that is not well-formed XMP is a warning naming it; its photo is done with the master's own metadata", async () => {
    expect(run.stderr).toMatch(/^darkroom: warning: bad\.tif: XMP sidecar .*bad\.xmp not read: not well-formed XML/m);
    const bad = await exif.read(path.join(dir, 'out', 'bad.jpg'));
    expect(bad['XMP-dc:Description']).toBe('the master says');
    expect(bad['XMP-iptcExt:DigitalSourceType']).toBeDefined();
    const s = JSON.parse((await runCli(['status', jobs, '--json'], env())).stdout) as { done: number; failed: number };
    expect(s).toMatchObject({ done: 4, failed: 0 });
  });

  it('are named in the report and in provenance.csv', async () => {
    const r = await runCli(['report', jobs, '--out', path.join(dir, 'report.html')], env());
    expect(r.code, r.stderr).toBe(0);
    const html = readFileSync(path.join(dir, 'report.html'), 'utf8');
    const data = JSON.parse(html.match(/<script type="application\/json" id="photo-data">(.*?)<\/script>/s)![1]!) as {
      photos: { p: string; m: { s: string[] | null } | null }[];
    };
    const by = new Map(data.photos.map((x) => [x.p, x.m?.s ?? null]));
    expect(Object.fromEntries(by)).toEqual({
      'bad.tif': null,
      'both.tif': ['both.XMP', 'both.TIF.xmp'],
      'dt.tif': ['dt.tif.xmp'],
      'lr.tif': ['lr.xmp'],
    });
    const m = await runCli(['manifest', jobs], env());
    expect(m.code, m.stderr).toBe(0);
    const rows = parseCsv(readFileSync(path.join(dir, 'out', 'provenance.csv'), 'utf8'), { columns: true }) as Record<string, string>[];
    expect(Object.fromEntries(rows.map((x) => [x.output_path, x.input_sidecars]))).toEqual({
      'bad.jpg': '',
      'both.jpg': 'both.XMP; both.TIF.xmp',
      'dt.jpg': 'dt.tif.xmp',
      'lr.jpg': 'lr.xmp',
    });
  });
});
