import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import { Ledger } from '../../src/ledger/index.js';
import { assignOutputNames, namingOptions } from '../../src/pipeline/naming.js';
import { outputPathProblem } from '../../src/pipeline/outputPaths.js';
import { makeTempDir } from '../helpers/job.js';

const dir = makeTempDir('darkroom-outpaths-');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const H = (c: string) => c.repeat(64).slice(0, 64);

/** The problem outputPathProblem finds for one input name under a job's output settings (nothing is written). */
function problemFor(name: string, output: string, steps = '[{ capability: enhance }]'): string | null {
  writeFileSync(path.join(dir, 'jobs.yaml'), `input: { dir: ./photos }\noutput: ${output}\nsteps: ${steps}\n`);
  const config = loadConfig(path.join(dir, 'jobs.yaml'), { env: {} });
  const ledger = Ledger.open(':memory:');
  try {
    ledger.identity.reconcile([{ name, src: `/photos/${name}`, sizeBytes: 1, mtimeMs: 1, contentHash: H('1'), skipReason: null }], [], { keyFps: [] });
    assignOutputNames(ledger, namingOptions(config));
    return outputPathProblem(ledger, ledger.items.get(1)!, config);
  } finally {
    ledger.close();
  }
}

describe('outputPathProblem (the download\'s own paths, before any call)', () => {
  it('accepts ordinary names, and the longest file name a file system takes', () => {
    expect(problemFor('album/photo.jpg', '{ dir: ./out }')).toBeNull();
    // 250 bytes of {name}: "<name>.webp" is 255, the longest result type's name fits
    expect(problemFor(`${'a'.repeat(250)}.jpg`, '{ dir: ./out }')).toBeNull();
  });

  it('refuses a name that is too long for any result type, a folder name over 255 bytes, and sidecars and intermediates too long', () => {
    expect(problemFor(`${'a'.repeat(251)}.jpg`, '{ dir: ./out }')).toBe(
      `output file name ${'a'.repeat(251)}.webp would be 256 bytes, over the file system's 255; rename the input or shorten output.pattern`,
    );
    expect(problemFor(`${'b'.repeat(250)}.jpg`, "{ dir: ./out, pattern: '{name}-{step}/{name}.{ext}' }")).toMatch(
      /^output folder name b{250}-enhance would be 258 bytes, over the file system's 255/,
    );
    expect(problemFor(`${'c'.repeat(248)}.jpg`, '{ dir: ./out, sidecar: true }')).toMatch(/^output file name c{248}\.jpg\.json would be 257 bytes/);
    expect(problemFor(`${'c'.repeat(248)}.jpg`, '{ dir: ./out }')).toBeNull();
    expect(
      problemFor(`${'d'.repeat(240)}.jpg`, '{ dir: ./out, keepIntermediates: true }', '[{ capability: restore }, { capability: upscale }]'),
    ).toBeNull(); // its intermediate d….restore.webp is 253 bytes
    expect(
      problemFor(`${'d'.repeat(246)}.jpg`, '{ dir: ./out, keepIntermediates: true }', '[{ capability: restore }, { capability: upscale }]'),
    ).toMatch(/^output file name d{246}\.restore\.jpg would be 258 bytes/);
  });

  it(`refuses a whole path of PATH_MAX bytes or more, and a name that leaves the output folder`, () => {
    const deep = Array.from({ length: 17 }, (_, i) => `${i}`.padEnd(250, 'x')).join('/');
    expect(problemFor('photo.jpg', `{ dir: ./${deep} }`)).toMatch(/^output path \/.*photo\.jpg would be 4\d{3} bytes, over the system's limit of 4095/);
    expect(problemFor('...jpg', "{ dir: ./out, pattern: '{name}/{step}.{ext}' }")).toBe(
      'output path for ...jpg would leave the output folder; rename the input, or change output.pattern',
    );
  });
});
