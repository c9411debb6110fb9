import path from 'node:path';
import micromatch from 'micromatch';
import type { Config } from '../../config/index.js';
import { hiddenMatcher } from '../hidden.js';

/** Which names under input.dir a followed folder takes: the ones its discovery would list. */
export interface InputMatch {
  /** A file's path under input.dir ('/'-separated) is one the job takes. */
  wanted(relPath: string): boolean;
  /** A folder under input.dir that holds nothing the job takes: the output folder, hidden ones. */
  skipFolder(relDir: string): boolean;
}

/**
 * The job's include and exclude patterns, hidden names and output folder, as discovery's
 * walk applies them (discover.ts listInputs: fast-glob, which matches with micromatch and
 * `dot: true`), for one name at a time.
 */
export function inputMatch(config: Config): InputMatch {
  const dir = config.input.dir ?? '';
  const outRel = path.relative(dir, config.output.dir).split(path.sep).join('/');
  const outInside = outRel !== '' && !outRel.startsWith('..') && !path.isAbsolute(outRel);
  const isHidden = hiddenMatcher(config.input.include);
  const include = (r: string) => micromatch.isMatch(r, config.input.include as string[], { dot: true });
  const exclude = (r: string) => config.input.exclude.length > 0 && micromatch.isMatch(r, config.input.exclude as string[], { dot: true });
  const inOutput = (r: string) => outInside && (r === outRel || r.startsWith(`${outRel}/`));
  return {
    wanted: (r) => r !== '' && !inOutput(r) && include(r) && !exclude(r) && (config.input.hidden || !isHidden(r)),
    skipFolder: (r) => inOutput(r) || (!config.input.hidden && isHidden(r)),
  };
}
