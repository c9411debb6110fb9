import { existsSync, realpathSync } from 'node:fs';
import path from 'node:path';
import type { Config } from '../config/index.js';
import { CAPABILITIES } from '../spec/capabilities.js';
import type { ItemRow, Ledger } from '../ledger/index.js';
import type { Logger } from '../log.js';
import { EXTENSIONS } from '../spec/images.js';
import { checkTargets, namingOptions, outputTargets, type OutputTarget } from './naming.js';
import { DownloadError } from '../errors.js';

/**
 * Whether a photo's outputs can be written, checked before any call is spent on it: an output found unwritable only at the download is a photo paid for and
 * not delivered. The paths are the download's own (naming.ts: outputTargets, checkTargets,
 * ledger.outputs.ownerOf), so the two never disagree on a name.
 *
 * The result's type, which gives the extension, is known only once it is downloaded (the
 * spec names no result format), so names are checked with the type the result is expected
 * to have: the input's own (a TIFF or BMP is sent as JPEG or PNG), PNG after background
 * removal. Checking every type instead would hold back a photo whose name is exactly at the
 * limit, or whose `.png` twin is an operator's file, for a result type that rarely comes. A
 * result that does come back in another type is checked again at the download, which parks
 * the paid photo with what to do (never fails it).
 * What is checked, for each name of the photo:
 * - the path stays inside output.dir: by its name (`{name}` of `...jpg` is `..`), and through
 *   a symbolic link in the output tree (the rule writeAtomically applies before writing);
 * - every file and folder name of an output is at most NAME_MAX bytes, the whole path under
 *   PATH_MAX (a sidecar or kept intermediate past the limit is skipped with a warning at the
 *   download, so it never holds back the photo itself);
 * - no file is there that this ledger did not write.
 */

/** Bytes in one file name on the file systems darkroom meets (ext4, XFS, Btrfs, tmpfs, APFS, NTFS: 255). */
const NAME_MAX = 255;
/** Linux's PATH_MAX, with its terminating NUL. */
const PATH_MAX = 4096;

/** The extension the photo's result is expected to have (see above). */
function expectedExtension(item: Pick<ItemRow, 'src_path'>, config: Pick<Config, 'steps'>): string {
  const last = config.steps.at(-1)?.capability;
  if (last !== undefined && CAPABILITIES[last].resultFormat === 'png') return EXTENSIONS.png;
  const own = /\.([A-Za-z0-9]+)(?:[?#].*)?$/.exec(item.src_path)?.[1]?.toLowerCase();
  if (own === 'png') return EXTENSIONS.png;
  if (own === 'webp') return EXTENSIONS.webp;
  return EXTENSIONS.jpeg;
}

/** Why the photo's outputs cannot be written, or null when they can. */
export function outputPathProblem(ledger: Ledger, item: ItemRow, config: Config): string | null {
  const naming = namingOptions(config);
  const outputDir = config.output.dir;
  const realOutput = realOrNull(outputDir);
  const dirsSeen = new Set<string>();
  {
    const ext = expectedExtension(item, config);
    let targets: OutputTarget[];
    let files: string[];
    try {
      targets = outputTargets(ledger, item, ext, outputDir, naming);
      files = targets.map((t) => t.path);
    } catch (err) {
      if (err instanceof DownloadError) return `${err.message}; rename the input, or change output.pattern`;
      throw err;
    }
    for (const file of files) {
      const long = tooLong(outputDir, file);
      if (long !== null) return long;
      const dir = path.dirname(file);
      if (realOutput !== null && !dirsSeen.has(dir)) {
        dirsSeen.add(dir);
        const link = leavesThroughLink(dir, outputDir, realOutput);
        if (link !== null) return link;
      }
    }
    try {
      checkTargets(ledger, item, targets);
    } catch (err) {
      if (err instanceof DownloadError) return err.message;
      throw err;
    }
    const rival = ledger.outputs.ownerOf(targets[0]!.path);
    if (rival !== undefined && rival.id !== item.id) {
      return `${targets[0]!.path} is the output of ${rival.rel_path} already (two inputs differ only in their extension); rename one of them and run again`;
    }
  }
  return null;
}

function tooLong(outputDir: string, file: string): string | null {
  const rel = path.relative(outputDir, file).split(path.sep);
  for (const [i, name] of rel.entries()) {
    const n = Buffer.byteLength(name);
    if (n > NAME_MAX) {
      const what = i === rel.length - 1 ? 'file' : 'folder';
      return `output ${what} name ${name} would be ${n} bytes, over the file system's ${NAME_MAX}; rename the input or shorten output.pattern`;
    }
  }
  const n = Buffer.byteLength(file);
  if (n >= PATH_MAX) {
    return `output path ${file} would be ${n} bytes, over the system's limit of ${PATH_MAX - 1}; use a shorter output.dir or output.pattern`;
  }
  return null;
}

/** The deepest folder of `dir` that exists must really be inside output.dir (not a link out of it). */
function leavesThroughLink(dir: string, outputDir: string, realOutput: string): string | null {
  let existing = dir;
  while (!existsSync(existing) && existing !== path.dirname(existing)) existing = path.dirname(existing);
  const real = realOrNull(existing);
  if (real === null) return null;
  const back = path.relative(realOutput, real);
  if (back.startsWith('..') || path.isAbsolute(back)) {
    return `${path.relative(outputDir, dir) || dir} leads outside the output folder (to ${real}) through a symbolic link; remove the link, or move the photo`;
  }
  return null;
}

function realOrNull(p: string): string | null {
  try {
    return realpathSync.native(p);
  } catch {
    return null;
  }
}

/**
 * Discovery's sweep over photos that have their step-1 input and no create yet (a URL input
 * never passes the upload stage, which checks the others): one whose outputs cannot be
 * written is skipped with the reason, before its first create. A later run looks at it
 * again (the skip is lifted at reconcile, and the upload stage checks once more).
 */
export function skipUnwritableBeforeCreate(ledger: Ledger, config: Config, log: Logger): number {
  let skipped = 0;
  for (const item of ledger.checks.notYetCreated()) {
    const problem = outputPathProblem(ledger, item, config);
    if (problem === null) continue;
    ledger.items.move(item.id, 'uploaded', 'skipped', { reason: problem }, problem);
    log.warn({ item: item.id }, `${item.rel_path} skipped: ${problem}`);
    skipped++;
  }
  return skipped;
}
