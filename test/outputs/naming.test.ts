import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { checkPattern, type OutputConfig, type StepConfig } from '../../src/config/index.js';
import { Ledger, type FoundFile } from '../../src/ledger/index.js';
import { urlIdentity } from '../../src/inputs/identity.js';
import { assignOutputNames, outputTargets, relOutputPath, stepLabel, type NamingOptions } from '../../src/outputs/naming.js';
import { filesUnder, makeJob, writePhoto } from '../helpers/job.js';
import { simSession, simulate } from '../helpers/simulate.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

const H = (c: string) => c.repeat(64).slice(0, 64);
const f = (name: string, hash: string): FoundFile => ({
  name,
  src: `/in/${name}`,
  sizeBytes: 1,
  mtimeMs: 1,
  contentHash: hash,
  skipReason: null,
});
const steps = (...caps: string[]) => caps.map((capability) => ({ capability }) as StepConfig);
const naming = (output: Partial<OutputConfig>, s = steps('restore', 'upscale')): NamingOptions => ({
  output: {
    dir: '/out',
    layout: 'mirror',
    pattern: '{name}.{ext}',
    keepIntermediates: false,
    metadata: 'none',
    sidecar: { json: false, xmp: false },
    ...output,
  },
  steps: s,
});

function paths(l: Ledger, opts: NamingOptions, ext = 'jpg'): string[] {
  return l.items
    .all()
    .flatMap((item) => outputTargets(l, item, ext, '/out', opts).map((t) => path.relative('/out', t.path).split(path.sep).join('/')));
}

describe('output names', () => {
  it('mirror the tree by default, and flat resolves the same name in two folders with ~2, in path order', () => {
    const l = Ledger.open(':memory:');
    l.discovery.reconcile([f('a/photo.tif', H('1')), f('b/photo.png', H('2')), f('c/Photo.jpg', H('3'))], [], { keyFps: [] });
    assignOutputNames(l, naming({}));
    expect(paths(l, naming({}))).toEqual(['a/photo.jpg', 'b/photo.jpg', 'c/Photo.jpg']);
    const flat = naming({ layout: 'flat' });
    assignOutputNames(l, flat);
    // "photo" and "Photo" are one file on a case-insensitive file system
    expect(paths(l, flat)).toEqual(['photo.jpg', 'photo~2.jpg', 'Photo~3.jpg']);
  });

  it('keeps a name once given: a file added later that sorts first does not rename earlier outputs', () => {
    const l = Ledger.open(':memory:');
    const flat = naming({ layout: 'flat' });
    l.discovery.reconcile([f('b/photo.jpg', H('2')), f('c/photo.jpg', H('3'))], [], { keyFps: [] });
    assignOutputNames(l, flat);
    l.discovery.reconcile([f('a/photo.jpg', H('1')), f('b/photo.jpg', H('2')), f('c/photo.jpg', H('3'))], [], { keyFps: [] });
    assignOutputNames(l, flat);
    const byLabel = Object.fromEntries(l.items.all().map((i) => [i.rel_path, paths(l, flat).at(i.id - 1)]));
    expect(byLabel).toEqual({ 'b/photo.jpg': 'photo.jpg', 'c/photo.jpg': 'photo~2.jpg', 'a/photo.jpg': 'photo~3.jpg' });
  });

  it('tells apart Unicode names that differ only in normalisation', () => {
    const l = Ledger.open(':memory:');
    const nfc = 'Zoë.jpg';
    const nfd = 'Zoe\u0308.jpg';
    l.discovery.reconcile([f(nfc, H('1')), f(nfd, H('2'))], [], { keyFps: [] });
    assignOutputNames(l, naming({}));
    expect(
      paths(l, naming({}))
        .map((p) => p.normalize('NFC'))
        .sort(),
    ).toEqual(['Zoë.jpg', 'Zoë~2.jpg']);
  });

  it('fills {name}, {step} and {ext}, with folders, and names URL inputs from their list', () => {
    const l = Ledger.open(':memory:');
    l.discovery.reconcile(
      [f('album/one.jpg', H('1'))],
      [{ url: 'https://x.test/s/9.jpg', name: 'family/nine', contentHash: urlIdentity('https://x.test/s/9.jpg') }],
      {
        keyFps: ['k'],
      },
    );
    const o = naming({ pattern: '{step}/{name}-restored.{ext}' });
    assignOutputNames(l, o);
    expect(paths(l, o, 'png')).toEqual(['album/upscale/one-restored.png', 'family/upscale/nine-restored.png']);
    expect(relOutputPath('', 'one', 'jpg', naming({}), 0)).toBe('one.restore.jpg');
    expect(relOutputPath('', 'one', 'jpg', o, 0)).toBe('restore/one-restored.jpg');
    expect(stepLabel(steps('enhance', 'upscale', 'enhance'), 2)).toBe('3-enhance');
  });

  it('checks the pattern before any call', () => {
    expect(checkPattern('{name}.{ext}')).toBeNull();
    expect(checkPattern('{name}')).toMatch(/must contain \{ext\}/);
    expect(checkPattern('{nme}.{ext}')).toMatch(/unknown placeholder \{nme\}/);
    expect(checkPattern('../{name}.{ext}')).toMatch(/"\.\."/);
    expect(checkPattern('/abs/{name}.{ext}')).toMatch(/relative/);
    expect(checkPattern('{name}?.{ext}')).toMatch(/must not contain/);
    expect(checkPattern('out.{ext}')).toMatch(/must contain \{name\}/);
  });

  it('flat layout with a pattern, end to end: every output where its name says', async () => {
    const job = await makeJob({
      photos: 0,
      steps: [{ capability: 'restore' }],
      extra: { output: { dir: './out', layout: 'flat', pattern: '{name}_{step}.{ext}' } },
    });
    cleanups.push(job.cleanup);
    await writePhoto(path.join(job.inputDir, 'x/photo.jpg'), 1);
    await writePhoto(path.join(job.inputDir, 'y/photo.jpg'), 2);
    await writePhoto(path.join(job.inputDir, 'y/ünïcödé 写真.png'), 3, 'png');
    const s = simSession({ job, sim: { seed: 7 } });
    expect((await simulate(s)).result.exitCode).toBe(0);
    expect(filesUnder(job.outputDir)).toEqual(['photo_restore.jpg', 'photo~2_restore.jpg', 'ünïcödé 写真_restore.png']);
  });
});
