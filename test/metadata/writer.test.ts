import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { structValue, type Provenance } from '../../src/metadata/provenance.js';
import { EXIF_TO_XMP, IPTC_TO_XMP, XMP_TO_EXIF, XMP_TO_IPTC } from '../../src/metadata/tags.js';
import { MetadataWriter, summarize } from '../../src/metadata/writer.js';
import { makeTempDir } from '../helpers/job.js';
import { carryTo, Exif, pixelPrint, solid } from '../helpers/metadata.js';

/** The metadata writer on its own: ExifTool's mappings, the levels, hostile values, broken inputs. */

const exif = new Exif();
const writer = new MetadataWriter({ maxProcs: 1 });
const dirs: string[] = [];
afterEach(() => {
  while (dirs.length) rmSync(dirs.pop()!, { recursive: true, force: true });
});
afterAll(async () => {
  await writer.end();
  await exif.end();
});

function tmp(): string {
  const d = makeTempDir('darkroom-meta-');
  dirs.push(d);
  return d;
}

const PROVENANCE: Provenance = {
  aiSystem: 'Example API',
  agent: 'darkroom 0.0.0',
  original: { path: 'box 1/scan.jpg', sha256: 'ab'.repeat(32) },
  steps: [{ action: 'edited', whenMs: Date.UTC(2026, 10, 27, 10), parameters: 'capability=restore; task=t-1' }],
  identity: 'test',
};

/** A JPEG with dates, GPS, camera, IPTC and XMP, as a photo manager leaves it. */
async function richJpeg(file: string): Promise<void> {
  await solid(file, 48, 32, [200, 150, 100], 'jpeg');
  await exif.write(file, [
    '-EXIF:DateTimeOriginal=1962:07:14 10:30:00',
    '-EXIF:Make=Epson',
    '-GPSLatitude=48.8566',
    '-GPSLatitudeRef=N',
    '-IPTC:Caption-Abstract=Grandma at the beach',
    '-IPTC:Keywords=beach',
    '-IPTC:By-line=J. Doe',
    '-IPTC:City=Deauville',
    '-XMP-dc:Title=The beach',
    '-XMP-photoshop:Instructions=handle with care',
  ]);
}

describe("ExifTool's own mappings", () => {
  const argFiles = path.join(path.dirname(createRequire(import.meta.url).resolve('exiftool-vendored.pl')), 'bin', 'arg_files');
  const xmpLines = (f: string) =>
    readFileSync(path.join(argFiles, f), 'utf8')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l.startsWith('-XMP'));

  it('are the ones ExifTool ships: IPTC → XMP for formats without IPTC, EXIF and GPS → XMP for sidecars', () => {
    expect(IPTC_TO_XMP).toEqual(xmpLines('iptc2xmp.args'));
    expect([...new Set(EXIF_TO_XMP)].sort()).toEqual([...new Set([...xmpLines('exif2xmp.args'), ...xmpLines('gps2xmp.args')])].sort());
  });

  it("are the ones ExifTool ships for an input's XMP sidecar: XMP → EXIF, and XMP → IPTC less the Photoshop digest", () => {
    const lines = (f: string) =>
      readFileSync(path.join(argFiles, f), 'utf8')
        .split('\n')
        .map((l) => l.trim())
        .filter((l) => /^-(EXIF|GPS|Composite|IPTC):/.test(l));
    expect(XMP_TO_EXIF).toEqual(lines('xmp2exif.args'));
    expect(XMP_TO_IPTC).toEqual(lines('xmp2iptc.args'));
  });
});

describe('MetadataWriter.carry', () => {
  it('at basic, carries dates, GPS, title, caption, keywords and creator, and leaves the camera, the city and the rest', async () => {
    const d = tmp();
    await richJpeg(path.join(d, 'in.jpg'));
    await solid(path.join(d, 'raw.jpg'), 48, 32, [10, 20, 30], 'jpeg');
    const out = path.join(d, 'out.jpg');
    const r = await carryTo(
      writer,
      {
        raw: path.join(d, 'raw.jpg'),
        kind: 'jpeg',
        level: 'basic',
        source: { file: path.join(d, 'in.jpg') },
        provenance: PROVENANCE,
      },
      out,
    );
    expect(r).toMatchObject({ carried: 'basic', note: null, dateTaken: '1962-07-14 10:30:00', caption: 'Grandma at the beach' });
    const t = await exif.read(out, true);
    expect(t['ExifIFD:DateTimeOriginal']).toBe('1962:07:14 10:30:00');
    expect(t['GPS:GPSLatitude']).toBeCloseTo(48.8566, 4);
    expect(t['IPTC:Caption-Abstract']).toBe('Grandma at the beach');
    expect(t['IPTC:Keywords']).toBe('beach');
    expect(t['IPTC:By-line']).toBe('J. Doe');
    expect(t['XMP-dc:Title']).toBe('The beach');
    expect(t['IFD0:Make']).toBeUndefined();
    expect(t['IPTC:City']).toBeUndefined();
    expect(t['XMP-photoshop:Instructions']).toBeUndefined();
    expect(t['XMP-iptcExt:DigitalSourceType']).toBeDefined();
    expect(await pixelPrint(out)).toBe(await pixelPrint(path.join(d, 'raw.jpg')));
  });

  it('puts IPTC in XMP for PNG and WEBP, which have no place for IPTC-IIM, and EXIF in their own EXIF chunk', async () => {
    const d = tmp();
    await richJpeg(path.join(d, 'in.jpg'));
    for (const kind of ['png', 'webp'] as const) {
      await solid(path.join(d, `raw.${kind}`), 48, 32, [10, 20, 30], kind);
      const out = path.join(d, `out.${kind}`);
      const r = await carryTo(
        writer,
        {
          raw: path.join(d, `raw.${kind}`),
          kind,
          level: 'all',
          source: { file: path.join(d, 'in.jpg') },
          provenance: PROVENANCE,
        },
        out,
      );
      expect(r.carried, kind).toBe('all');
      const t = await exif.read(out);
      expect(
        Object.keys(t).filter((k) => k.startsWith('IPTC:')),
        kind,
      ).toEqual([]);
      expect(t['XMP-dc:Description'], kind).toBe('Grandma at the beach');
      expect(t['XMP-dc:Creator'], kind).toEqual(['J. Doe']);
      expect(t['XMP-photoshop:City'], kind).toBe('Deauville');
      expect(t['ExifIFD:DateTimeOriginal'], kind).toBe('1962:07:14 10:30:00');
      expect(await pixelPrint(out), kind).toBe(await pixelPrint(path.join(d, `raw.${kind}`)));
    }
  });

  it("marks an output whose input's metadata is damaged, and still writes the disclosure and provenance on it", async () => {
    const d = tmp();
    await solid(path.join(d, 'good.jpg'), 40, 30, [1, 2, 3], 'jpeg');
    const good = readFileSync(path.join(d, 'good.jpg'));
    // An APP1 EXIF block that is garbage after its header; and one that claims more bytes than the file has.
    const garbage = Buffer.concat([Buffer.from([0xff, 0xe1, 0x00, 0x40]), Buffer.from('Exif\0\0MM\0*'), Buffer.alloc(52, 0xee)]);
    writeFileSync(path.join(d, 'bad-ifd.jpg'), Buffer.concat([good.subarray(0, 2), garbage, good.subarray(2)]));
    const cut = Buffer.concat([Buffer.from([0xff, 0xe1, 0x7f, 0xff]), Buffer.from('Exif\0\0II*\0'), Buffer.alloc(20, 0x01)]);
    writeFileSync(path.join(d, 'cut.jpg'), Buffer.concat([good.subarray(0, 2), cut]));
    copyFileSync(path.join(d, 'good.jpg'), path.join(d, 'raw.jpg'));
    for (const [name, why] of [
      ['bad-ifd.jpg', /^carried all ExifTool could read; not carried: the damaged part of the input's metadata \(Bad IFD0 directory\)$/],
      ['cut.jpg', /^carried all ExifTool could read; not carried: the damaged part of the input's metadata \(JPEG format error\)$/],
    ] as const) {
      const out = path.join(d, `out-${name}`);
      const r = await carryTo(
        writer,
        {
          raw: path.join(d, 'raw.jpg'),
          kind: 'jpeg',
          level: 'all',
          source: { file: path.join(d, name) },
          provenance: PROVENANCE,
        },
        out,
      );
      expect(r.note, name).toMatch(why);
      expect((await exif.read(out))['XMP-iptcExt:DigitalSourceType'], name).toBeDefined();
      expect(await pixelPrint(out), name).toBe(await pixelPrint(path.join(d, 'raw.jpg')));
    }
    // A whole input with no metadata at all is not damaged: there is just nothing to carry.
    await solid(path.join(d, 'bare.png'), 20, 20, [1, 2, 3], 'png');
    const bare = await carryTo(
      writer,
      {
        raw: path.join(d, 'raw.jpg'),
        kind: 'jpeg',
        level: 'all',
        source: { file: path.join(d, 'bare.png') },
        provenance: PROVENANCE,
      },
      path.join(d, 'out-bare.jpg'),
    );
    expect(bare).toMatchObject({ carried: 'all', note: null });
  });

  it('writes the provenance alone for an input it may not read', async () => {
    const d = tmp();
    await solid(path.join(d, 'raw.jpg'), 40, 30, [1, 2, 3], 'jpeg');
    const a = await carryTo(
      writer,
      {
        raw: path.join(d, 'raw.jpg'),
        kind: 'jpeg',
        level: 'all',
        source: { none: 'a URL input' },
        provenance: PROVENANCE,
      },
      path.join(d, 'a.jpg'),
    );
    expect(a).toMatchObject({ carried: 'provenance', note: 'a URL input' });
    expect((await exif.read(path.join(d, 'a.jpg')))['XMP-iptcExt:DigitalSourceType']).toBeDefined();
  });

  it("carries the metadata of inputs, into folders, named with ExifTool's pattern codes, line breaks and quotes", async () => {
    const d = tmp();
    // ExifTool reads %d, %f, %e in the names it is given as patterns; a line break would end its argument.
    const folder = path.join(d, 'out 100%d\nfolder');
    mkdirSync(folder);
    for (const name of ['50%dogs %f.jpg', 'two\nlines.jpg', 'it\'s "quoted" -o.jpg']) {
      await richJpeg(path.join(d, 'plain-name.jpg'));
      renameSync(path.join(d, 'plain-name.jpg'), path.join(d, name));
      await solid(path.join(folder, '.dr-raw.darkroom-tmp'), 48, 32, [10, 20, 30], 'jpeg');
      const out = path.join(folder, '.dr-out.darkroom-tmp');
      const r = await carryTo(
        writer,
        {
          raw: path.join(folder, '.dr-raw.darkroom-tmp'),
          kind: 'jpeg',
          level: 'all',
          source: { file: path.join(d, name) },
          provenance: { ...PROVENANCE, original: { path: name, sha256: null } },
        },
        out,
      );
      expect(r, name).toMatchObject({ carried: 'all', note: null, caption: 'Grandma at the beach' });
      copyFileSync(out, path.join(d, 'check.jpg')); // the test's own ExifTool takes names as they are
      const t = await exif.read(path.join(d, 'check.jpg'));
      rmSync(path.join(d, 'check.jpg'));
      expect(t['IPTC:Caption-Abstract'], name).toBe('Grandma at the beach');
      expect((t['XMP-xmpMM:DerivedFrom'] as Record<string, string>).FilePath, name).toBe(name.replace('\n', '\ufffd'));
      rmSync(out);
    }
    // The links it read and wrote through are its own: the inputs and the folder are untouched.
    expect(readdirSync(folder)).toEqual(['.dr-raw.darkroom-tmp']);
    expect(readdirSync(d).sort()).toEqual(['50%dogs %f.jpg', 'it\'s "quoted" -o.jpg', 'out 100%d\nfolder', 'two\nlines.jpg'].sort());
  });

  it('fails, writing nothing, when ExifTool cannot write the file at all', async () => {
    const d = tmp();
    writeFileSync(path.join(d, 'raw.jpg'), Buffer.from('not an image at all'));
    await expect(
      carryTo(
        writer,
        {
          raw: path.join(d, 'raw.jpg'),
          kind: 'jpeg',
          level: 'all',
          source: { none: 'x' },
          provenance: PROVENANCE,
        },
        path.join(d, 'out.jpg'),
      ),
    ).rejects.toThrow(/ExifTool cannot write/);
    expect(existsSync(path.join(d, 'out.jpg'))).toBe(false);
  });
});

describe('structure values', () => {
  it("survive ExifTool's structure syntax whatever they hold", async () => {
    const d = tmp();
    await solid(path.join(d, 'raw.jpg'), 20, 20, [1, 2, 3], 'jpeg');
    const hostile = ' {a,b}c|d[e]f, g} ';
    const steps = [{ action: 'edited', whenMs: 0, parameters: hostile }];
    await carryTo(
      writer,
      {
        raw: path.join(d, 'raw.jpg'),
        kind: 'jpeg',
        level: 'all',
        source: { none: 'x' },
        provenance: { ...PROVENANCE, steps, original: { path: hostile, sha256: null } },
      },
      path.join(d, 'out.jpg'),
    );
    const t = await exif.read(path.join(d, 'out.jpg'));
    expect((t['XMP-xmpMM:History'] as Record<string, string>[])[0]!.Parameters).toBe(hostile);
    expect((t['XMP-xmpMM:DerivedFrom'] as Record<string, string>).FilePath).toBe(hostile);
    expect(structValue('plain')).toBe('plain');
  });
});

describe('summarize', () => {
  it('takes the date and caption from the first place that states them', () => {
    expect(summarize({ 'IPTC:DateCreated': '1962:07:14', 'IPTC:TimeCreated': '10:30:00', 'IPTC:Caption-Abstract': 'c' })).toMatchObject({
      dateTaken: '1962-07-14 10:30:00',
      caption: 'c',
    });
    expect(summarize({ 'XMP-photoshop:DateCreated': 1962, 'IFD0:ImageDescription': 'd' })).toMatchObject({
      dateTaken: '1962',
      caption: 'd',
    });
    expect(summarize({}).dateTaken).toBeNull();
    expect(summarize({ 'XMP-dc:Description': 'x'.repeat(600) }).caption).toHaveLength(500);
  });
});
