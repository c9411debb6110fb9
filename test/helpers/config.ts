import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, expect } from 'vitest';
import { makeTempDir } from './job.js';
import { ConfigError } from '../../src/errors.js';

/**
 * `write(yaml)`: a jobs file in a fresh temp folder that has a `photos/` folder beside it,
 * removed after each test of the calling file.
 */
export function jobsFileWriter(): (yamlText: string) => string {
  let dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
    dirs = [];
  });
  return (yamlText) => {
    const dir = makeTempDir('darkroom-config-');
    dirs.push(dir);
    mkdirSync(path.join(dir, 'photos'));
    const file = path.join(dir, 'jobs.yaml');
    writeFileSync(file, yamlText);
    return file;
  };
}

/** The ConfigError `fn` throws (fails the test if it throws something else, or nothing). */
export function configErrorOf(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return e as ConfigError;
  }
  throw new Error('expected a ConfigError');
}
