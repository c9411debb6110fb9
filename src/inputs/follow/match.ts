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
  /** The output folder, when it is inside input.dir: its path under it. */
  readonly outputFolder: string | null;
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
  // Compiled once (a folder's listing asks of every name in it); a name matches a list when it matches one of it.
  const anyOf = (patterns: readonly string[]) => {
    const each = patterns.map((p) => micromatch.matcher(p, { dot: true }));
    return (r: string) => each.some((m) => m(r));
  };
  const include = anyOf(config.input.include);
  const exclude = anyOf(config.input.exclude);
  const inOutput = (r: string) => outInside && (r === outRel || r.startsWith(`${outRel}/`));
  return {
    wanted: (r) => r !== '' && !inOutput(r) && include(r) && !exclude(r) && (config.input.hidden || !isHidden(r)),
    skipFolder: (r) => inOutput(r) || (!config.input.hidden && isHidden(r)),
    outputFolder: outInside ? outRel : null,
  };
}
