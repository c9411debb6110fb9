import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sidecarNames, sidecarsOf } from '../../src/metadata/sidecars.js';

/**
 * An input's sidecars looked for among its folder's XMP names alone (the listing kept per
 * folder): what they are among every name of the folder, in a roll of thousands of scans
 * with extensions in every case, a folder and a dangling link named like sidecars, and a
 * link to a real one.
 */
let dir: string;
const roll = () => path.join(dir, 'roll');
const INPUTS = ['scan.tif', 'Scan.TIF', 'odd.jpg', 'folder.tif', 'linked.tif', 'dangling.tif', 'bare', 'a.b.tif', '0001.tif'];

beforeAll(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'darkroom-sidecars-'));
  mkdirSync(roll());
  for (let i = 0; i < 3_000; i++) writeFileSync(path.join(roll(), `${String(i).padStart(4, '0')}.tif`), '');
  const xmp = [
    'scan.XMP',
    'scan.Xmp',
    'scan.TIF.xmp',
    'Scan.xmp',
    'odd.JPG.XMP',
    'odd.xmp.bak',
    'bare.xmp',
    'a.b.xmp',
    'a.b.tif.xMp',
    '0001.xmp',
  ];
  for (const n of [...INPUTS, ...xmp]) writeFileSync(path.join(roll(), n), '');
  mkdirSync(path.join(roll(), 'folder.xmp'));
  symlinkSync(path.join(roll(), 'scan.XMP'), path.join(roll(), 'linked.xmp'));
  symlinkSync(path.join(roll(), 'nowhere.xmp'), path.join(roll(), 'dangling.xmp'));
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("an input's sidecars among its folder's XMP names", () => {
  it('are those found among all its names, the folder listed once', () => {
    const all = readdirSync(roll());
    const isFile = (f: string) => {
      try {
        return statSync(f).isFile();
      } catch {
        return false;
      }
    };
    const names = new Map<string, readonly string[]>();
    for (const input of INPUTS) {
      const expected = sidecarNames(input, all)
        .map((n) => path.join(roll(), n))
        .filter(isFile);
      expect(sidecarsOf(path.join(roll(), input), names), input).toEqual(expected);
    }
    expect([...names.keys()]).toEqual([roll()]);
    expect(names.get(roll())!.length).toBeLessThan(20);
    const got = (input: string) => sidecarsOf(path.join(roll(), input), names).map((f) => path.basename(f));
    expect(got('scan.tif')).toEqual(['scan.XMP', 'scan.Xmp', 'scan.TIF.xmp']);
    expect(got('odd.jpg')).toEqual(['odd.JPG.XMP']);
    expect(got('folder.tif')).toEqual([]);
    expect(got('linked.tif')).toEqual(['linked.xmp']);
    expect(got('dangling.tif')).toEqual([]);
    expect(got('bare')).toEqual(['bare.xmp']);
    expect(got('a.b.tif')).toEqual(['a.b.xmp', 'a.b.tif.xMp']);
  });

  it('of a folder that cannot be listed are none', () => {
    expect(sidecarsOf(path.join(dir, 'no such folder', 'scan.tif'))).toEqual([]);
  });
});
