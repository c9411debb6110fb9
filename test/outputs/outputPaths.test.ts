import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import { Ledger } from '../../src/ledger/index.js';
import { assignOutputNames, namingOptions } from '../../src/outputs/naming.js';
import { outputPathProblem } from '../../src/outputs/outputPaths.js';
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
    ledger.discovery.reconcile([{ name, src: `/photos/${name}`, sizeBytes: 1, mtimeMs: 1, contentHash: H('1'), skipReason: null }], [], {
      keyFps: [],
    });
    assignOutputNames(ledger, namingOptions(config));
    return outputPathProblem(ledger, ledger.items.get(1)!, config);
  } finally {
    ledger.close();
  }
}

describe("outputPathProblem (the download's own paths, before any call)", () => {
  it('accepts ordinary names, and the longest file name a file system takes', () => {
    expect(problemFor('album/photo.jpg', '{ dir: ./out }')).toBeNull();
    // 251 bytes of {name}: "<name>.jpg" is 255, the limit, and fits
    expect(problemFor(`${'a'.repeat(251)}.jpg`, '{ dir: ./out }')).toBeNull();
    // names are checked with the type the result is expected to have: the input's own, PNG after background removal
    expect(problemFor(`${'w'.repeat(251)}.webp`, '{ dir: ./out }')).toMatch(/^output file name w{251}\.webp would be 256 bytes/);
    expect(problemFor(`${'p'.repeat(252)}.jpg`, '{ dir: ./out }', '[{ capability: remove-background }]')).toMatch(
      /^output file name p{252}\.png would be 256 bytes/,
    );
  });

  it('refuses a name that is too long, a folder name over 255 bytes; never holds a photo back for its sidecar or intermediates', () => {
    expect(problemFor(`${'a'.repeat(252)}.jpg`, '{ dir: ./out }')).toBe(
      `output file name ${'a'.repeat(252)}.jpg would be 256 bytes, over the file system's 255; rename the input or shorten output.pattern`,
    );
    expect(problemFor(`${'b'.repeat(250)}.jpg`, "{ dir: ./out, pattern: '{name}-{step}/{name}.{ext}' }")).toMatch(
      /^output folder name b{250}-enhance would be 258 bytes, over the file system's 255/,
    );
    // the download skips a sidecar or intermediate past the limit with a warning, and writes the output
    expect(problemFor(`${'c'.repeat(248)}.jpg`, '{ dir: ./out, sidecar: true }')).toBeNull();
    expect(
      problemFor(`${'d'.repeat(240)}.jpg`, '{ dir: ./out, keepIntermediates: true }', '[{ capability: restore }, { capability: upscale }]'),
    ).toBeNull();
    expect(
      problemFor(`${'d'.repeat(246)}.jpg`, '{ dir: ./out, keepIntermediates: true }', '[{ capability: restore }, { capability: upscale }]'),
    ).toBeNull();
  });

  it(`refuses a whole path of PATH_MAX bytes or more, and a name that leaves the output folder`, () => {
    const deep = Array.from({ length: 17 }, (_, i) => `${i}`.padEnd(250, 'x')).join('/');
    expect(problemFor('photo.jpg', `{ dir: ./${deep} }`)).toMatch(
      /^output path \/.*photo\.jpg would be 4\d{3} bytes, over the system's limit of 4095/,
    );
    expect(problemFor('...jpg', "{ dir: ./out, pattern: '{name}/{step}.{ext}' }")).toBe(
      'output path for ...jpg would leave the output folder; rename the input, or change output.pattern',
    );
  });
});
