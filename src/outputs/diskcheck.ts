import type { Config } from '../config/index.js';
import type { SpaceFacts } from '../ledger/outputs.js';
import { tempPathIn } from './atomic.js';
import { nodeOutputFs, type OutputFs } from './outputfs.js';
import { OutputWriteError } from '../errors.js';

/**
 * The output folder, checked before a run spends anything: it exists or
 * can be made, a file can really be created, written, fsynced and removed there (not judged
 * by mode bits: as root they say yes to a read-only mount, and an ACL or a quota can say no
 * to anyone), and its file system has room for the results still to come.
 */

/**
 * Output bytes per input byte assumed until the ledger has seen results of its own
 * (OBSERVED_AFTER photos done). 2: enhance, restore, colorize and unblur give back an image
 * of the input's size, re-encoded (about as large as a JPEG input, up to a few times larger
 * as PNG); upscale and a PNG result weigh more, a JPEG result of a PNG scan less. The check
 * is there to refuse a run that plainly cannot fit, before a credit is spent: an estimate on
 * the high side would refuse runs that fit, with nothing the operator could do about it,
 * while one on the low side is caught safely during the run (a full disk stops new creates
 * and keeps the paid results for the next run). After three results the ledger's own ratio
 * is used.
 */
export const DEFAULT_OUTPUT_RATIO = 2;
const OBSERVED_AFTER = 3;
/** A result of an input whose size is unknown (a URL input): a 4K JPEG is 2–8 MB. */
const DEFAULT_OUTPUT_BYTES = 8 * 1024 * 1024;
/**
 * Kept free beyond the estimate: the ledger, its WAL and the log grow during a run, and a
 * file system filled to its last block fails every program on it, not only darkroom.
 */
const SPACE_RESERVE_BYTES = 64 * 1024 * 1024;

export interface SpaceEstimate {
  readonly bytes: number;
  readonly ratio: number;
  /** Where the ratio came from, in words, for the operator's line. */
  readonly basis: string;
}

/** The bytes the outputs still to come are expected to take (see DEFAULT_OUTPUT_RATIO). */
export function expectedOutputBytes(f: SpaceFacts, config: Pick<Config, 'steps' | 'output'>): SpaceEstimate {
  const seen = f.observed.photos >= OBSERVED_AFTER && f.observed.inputBytes > 0;
  const ratio = seen ? f.observed.outputBytes / f.observed.inputBytes : DEFAULT_OUTPUT_RATIO;
  const basis = seen
    ? `${ratio.toFixed(1)}× the input's size, as the ${f.observed.photos} results so far`
    : `${DEFAULT_OUTPUT_RATIO}× the input's size, assumed until ${OBSERVED_AFTER} results are in`;
  const perUnknown = seen ? f.observed.outputBytes / f.observed.photos : DEFAULT_OUTPUT_BYTES;
  const perPhoto = f.photos > 0 ? (f.inputBytes * ratio + f.unknownSize * perUnknown) / f.photos : 0;
  // Each duplicate name gets a copy; kept intermediates are one more file per earlier step.
  const files = 1 + (config.output.keepIntermediates ? config.steps.length - 1 : 0);
  const bytes = Math.ceil((f.inputBytes * ratio + f.unknownSize * perUnknown + f.extraNames * perPhoto) * files);
  return { bytes: f.photos > 0 ? bytes : 0, ratio, basis };
}

/**
 * Make the output folder and really write a file there. The probe is named like a temp file
 * (atomic.ts), so a run killed in the middle leaves nothing the next one does not sweep.
 * Returns the operator's line, or null when the folder takes files.
 */
export function probeOutputFolder(dir: string, fs: OutputFs = nodeOutputFs): string | null {
  try {
    fs.mkdirp(dir);
  } catch (err) {
    const e = new OutputWriteError('create the output folder', dir, err);
    return `${e.message}; set output.dir to a folder you can write, or fix its permissions`;
  }
  const probe = tempPathIn(dir);
  let fd: number | undefined;
  try {
    fd = fs.create(probe);
    fs.write(fd, Buffer.from('darkroom checks that the output folder takes files\n'));
    fs.fsync(fd);
    fs.close(fd);
    fd = undefined;
    fs.remove(probe);
    return null;
  } catch (err) {
    if (fd !== undefined) {
      try {
        fs.close(fd);
      } catch {
        // the close of a file that could not be written changes nothing here
      }
    }
    try {
      fs.remove(probe);
    } catch {
      // nothing was created
    }
    const e = new OutputWriteError('write a file in the output folder', dir, err);
    return `${e.message}; set output.dir to a folder you can write (it may be read-only or full), or fix it, then run again`;
  }
}

/** Whether the output folder's file system has room for the results still to come; the operator's line if not. */
export function checkOutputSpace(
  dir: string,
  facts: SpaceFacts,
  config: Pick<Config, 'steps' | 'output'>,
  fs: OutputFs = nodeOutputFs,
): string | null {
  const need = expectedOutputBytes(facts, config);
  if (need.bytes === 0) return null;
  let free: number;
  try {
    free = fs.freeBytes(dir);
  } catch {
    return null; // a file system that cannot say (statfs refused): the probe already wrote there
  }
  if (free >= need.bytes + SPACE_RESERVE_BYTES) return null;
  return (
    `not enough free space in ${dir}: ${formatBytes(free)} free, about ${formatBytes(need.bytes + SPACE_RESERVE_BYTES)} needed ` +
    `(${facts.photos} photo(s) still to come at ${need.basis}, and ${formatBytes(SPACE_RESERVE_BYTES)} kept free); ` +
    'free space or set output.dir to a larger disk, then run again (nothing was spent)'
  );
}

function formatBytes(n: number): string {
  const units = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${n} bytes` : `${v.toFixed(v < 10 ? 1 : 0)} ${units[u]}`;
}
