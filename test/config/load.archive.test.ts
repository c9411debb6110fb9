import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig, requireInputDir } from '../../src/config/index.js';
import { configErrorOf, jobsFileWriter } from '../helpers/config.js';

const write = jobsFileWriter();

const errorOf = configErrorOf;

const job = (input: string, output = '{ dir: ./out }', steps = '[{ capability: restore }]', service = '{ apiKeyEnv: K }') =>
  `service: ${service}\ninput: ${input}\noutput: ${output}\nsteps: ${steps}\n`;

describe('loadConfig: archive jobs (issue 5)', () => {
  it('defaults: transcode auto, TIFF and BMP included, mirror layout, {name}.{ext}, no sidecars', () => {
    const c = loadConfig(write(job('{ dir: ./photos }')), { env: {} });
    expect(c.input).toMatchObject({ transcode: 'auto', maxPixels: null, urls: null, exclude: [] });
    expect(c.input.include[0]).toMatch(/tif,tiff,bmp/);
    expect(c.input.include[0]).toMatch(/TIF,TIFF,BMP/);
    expect(c.output).toMatchObject({
      layout: 'mirror',
      pattern: '{name}.{ext}',
      keepIntermediates: false,
      metadata: 'all',
      sidecar: { json: false, xmp: false },
    });
    expect(c.businessTypes).toMatchObject({
      colorize: 'COLORIZE',
      'remove-background': 'REMOVE_BACKGROUND',
      enhance: 'ENHANCE',
      image2image: 'IMAGE_TO_IMAGE',
    });
  });

  it('leaves TIFF and BMP out of the default include when transcode is off', () => {
    const c = loadConfig(write(job('{ dir: ./photos, transcode: off }')), { env: {} });
    expect(c.input.include[0]).not.toMatch(/tif/);
  });

  it('reads the archive options, URL list resolved against the YAML folder', () => {
    const file = write(
      job(
        '{ urls: ./list.txt, maxPixels: 40000000 }',
        '{ dir: ./out, layout: flat, pattern: "{step}/{name}.{ext}", keepIntermediates: true, sidecar: true }',
        '[{ capability: colorize }]',
        '{ apiKeyEnv: K, businessTypes: { colorize: COLOURIZE_V2, remove-background: BG_REMOVE } }',
      ),
    );
    const c = loadConfig(file, { env: {} });
    expect(c.input).toMatchObject({ dir: null, urls: path.join(path.dirname(file), 'list.txt'), maxPixels: 40_000_000 });
    expect(c.output).toMatchObject({
      layout: 'flat',
      pattern: '{step}/{name}.{ext}',
      keepIntermediates: true,
      sidecar: { json: true, xmp: false },
    });
    expect(c.businessTypes.colorize).toBe('COLOURIZE_V2');
    expect(c.businessTypes['remove-background']).toBe('BG_REMOVE');
    expect(c.businessTypes.restore).toBe('RESTORE');
    // a run needs the list to exist
    expect(errorOf(() => requireInputDir(c)).keyPath).toBe('input.urls');
    writeFileSync(path.join(path.dirname(file), 'list.txt'), 'https://x.test/a.jpg\n');
    expect(() => requireInputDir(c)).not.toThrow();
  });

  it.each([
    ['{ }', 'input.dir', /a folder of photos \(input.dir\), a URL list \(input.urls\), or both/],
    ['{ dir: ./photos, transcode: always }', 'input.transcode', /"auto"\|"off"/],
    ['{ dir: ./photos, maxPixels: -5 }', 'input.maxPixels', /.+/],
  ])('refuses input %s at %s', (input, keyPath, detail) => {
    const e = errorOf(() => loadConfig(write(job(input)), { env: {} }));
    expect(e.keyPath).toBe(keyPath);
    expect(e.message).toMatch(detail);
  });

  it.each([
    ['{ dir: ./out, layout: nested }', 'output.layout', /"mirror"\|"flat"/],
    ['{ dir: ./out, pattern: "{name}" }', 'output.pattern', /must contain \{ext\}/],
    ['{ dir: ./out, pattern: "../{name}.{ext}" }', 'output.pattern', /"\.\."/],
    ['{ dir: ./out, pattern: "{title}.{ext}" }', 'output.pattern', /unknown placeholder \{title\}/],
  ])('refuses output %s at %s', (output, keyPath, detail) => {
    const e = errorOf(() => loadConfig(write(job('{ dir: ./photos }', output)), { env: {} }));
    expect(e.keyPath).toBe(keyPath);
    expect(e.message).toMatch(detail);
  });

  it('accepts a businessType only for the capabilities the spec leaves without one', () => {
    const e = errorOf(() =>
      loadConfig(write(job('{ dir: ./photos }', undefined, undefined, '{ apiKeyEnv: K, businessTypes: { enhance: X } }')), { env: {} }),
    );
    expect(e.keyPath).toBe('service.businessTypes.enhance');
    const bad = errorOf(() =>
      loadConfig(write(job('{ dir: ./photos }', undefined, undefined, '{ apiKeyEnv: K, businessTypes: { colorize: "a/b" } }')), {
        env: {},
      }),
    );
    expect(bad.keyPath).toBe('service.businessTypes.colorize');
    expect(bad.message).toMatch(/a businessType name/);
  });

  it.each([
    ['[{ capability: restore }, { capability: colorize, mode: portrait }]', 'steps.1.mode', /colorize accepts no mode/],
    ['[{ capability: upscale, resolution: 2K }]', 'steps.0.resolution', /"4K"\|"8K"/],
    ['[{ capability: enhance }, { capability: upscale, mode: fast }]', 'steps.1.mode', /"general"\|"graphics"\|"portrait"\|"text"/],
    ['[{ capability: image2image }]', 'steps.0.style', /image2image requires a style/],
    ['[{ capability: restore, style: sepia }]', 'steps.0.style', /only image2image accepts style/],
    ['[{ capability: remove-background, resolution: 4K }]', 'steps.0.resolution', /only upscale accepts a resolution/],
    ['[]', 'steps', /.+/],
  ])('checks every step option before any call: %s', (steps, keyPath, detail) => {
    const e = errorOf(() => loadConfig(write(job('{ dir: ./photos }', undefined, steps)), { env: {} }));
    expect(e.keyPath).toBe(keyPath);
    expect(e.message).toMatch(detail);
    expect(e.exitCode).toBe(2);
  });
});
