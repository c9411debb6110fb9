import { existsSync } from 'node:fs';
import path from 'node:path';
import { clock } from '../clock.js';
import type { GoneNameFile, Ledger } from '../ledger/index.js';
import type { Logger } from '../log.js';
import { checksumFile, nodeOutputFs, sameFile, type OutputFs } from './outputfs.js';

/**
 * The outputs of names the inputs no longer have. Each name gets an output; when a name
 * goes (the input renamed or moved, one of two copies removed) while its photo's result
 * lives on under a current name, the files darkroom wrote for the old name (its output,
 * kept intermediates, sidecars) are retired, so the output folder and the manifest list the
 * current names only. The new name's output is written first, from the one already had
 * (writeOutputsOfDone), or by the photo's redo: nothing is paid again, and a rename of an
 * input is a rename of its output.
 *
 * Never lost on the way:
 * - the photo's only output: a file is retired only when the photo is done and has its
 *   output on disk under a current name (an intermediate, only when a current name has that
 *   step's too); a photo whose names are all gone keeps every file;
 * - a file a person changed since darkroom wrote it (its SHA-256 is not the one recorded,
 *   or none was recorded): left where it is, no longer counted as darkroom's;
 * - a decision made in review: it follows the photo to its new output (ledger retire);
 *   rejected outputs kept aside are no output of darkroom's any more, never looked at.
 *
 * Run after each discovery (under the run's lock) and as each photo is done. Stateless: a
 * run stopped half-way leaves files the next discovery finds again; a file that cannot be
 * removed is a warning, left for the next run.
 */
export async function retireGoneNames(ledger: Ledger, log: Logger, fs: OutputFs = nodeOutputFs, itemId?: number): Promise<number> {
  let retired = 0;
  for (const f of ledger.outputFiles.goneNameFiles(itemId)) {
    const current = ledger.outputFiles.currentFilesOf(f.itemId).filter((c) => existsSync(c.path) && !sameFile(c.path, f.path));
    const output = current.find((c) => c.kind === 'output');
    if (output === undefined) continue;
    if (f.kind === 'intermediate' && !current.some((c) => c.kind === 'intermediate' && c.stepIndex === f.stepIndex)) continue;
    const why = `written for ${f.name}, which is now ${output.name} (its output: ${output.path})`;
    try {
      if (await retireOne(ledger, f, output.path, fs)) {
        log.info({ item: f.itemId, kind: f.kind }, `removed ${f.path}, ${why}`);
        retired++;
      } else {
        log.warn({ item: f.itemId, kind: f.kind }, `kept ${f.path}, ${why}: ${keptWhy(f)}; it is left as it is, no longer darkroom's`);
      }
    } catch (err) {
      log.warn(
        { item: f.itemId, kind: f.kind, code: (err as NodeJS.ErrnoException).code },
        `could not retire ${f.path}, ${why}: ${(err as Error).message}; the next run tries again`,
      );
    }
  }
  return retired;
}

/** Removes the file if it is as darkroom wrote it (true), else leaves it (false); either way the ledger lets it go. */
async function retireOne(ledger: Ledger, f: GoneNameFile, to: string, fs: OutputFs): Promise<boolean> {
  let removed = true;
  if (existsSync(f.path)) {
    removed = f.sha256 !== null && (await clock.io(checksumFile(f.path))).sha256 === f.sha256;
    if (removed) {
      // Gone from the folder before the ledger lets it go: a kill in between leaves a record of a missing file, never a file of no one's.
      fs.remove(f.path);
      fs.syncDir(path.dirname(f.path));
    }
  }
  ledger.outputFiles.retire(f.path, f.itemId, to);
  return removed;
}

function keptWhy(f: GoneNameFile): string {
  return f.sha256 === null ? 'darkroom recorded no checksum of it, so cannot tell it is as written' : 'it changed since darkroom wrote it';
}
