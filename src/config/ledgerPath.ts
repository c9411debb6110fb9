import { realpathSync } from 'node:fs';
import path from 'node:path';

/** The ledger's file name when neither the jobs file (`ledger:`) nor `--ledger` names one. */
export const DEFAULT_LEDGER_FILE = 'darkroom.db';

/**
 * The ledger path as the kernel reads it. `path.resolve` drops `x/..` by spelling alone,
 * but when `x` is a symbolic link the kernel goes up from the link's target instead:
 * `sub/../darkroom.db`, with `sub` a link into another folder, names a file in that folder.
 * Taken by spelling it would name another ledger (a new one, where every photo is created
 * again) while SQLite, the shell and every other tool mean the one the kernel finds.
 *
 * Paths without `..` mean the same either way and are only made absolute. The file itself
 * need not exist (a first run creates it), nor its folder: the part that exists is resolved
 * by the kernel (realpath), the rest appended.
 */
export function resolveLedgerPath(base: string, raw: string): string {
  const joined = path.isAbsolute(raw) ? raw : `${base}${path.sep}${raw}`;
  if (!joined.split(/[\\/]+/).includes('..')) return path.resolve(joined);
  return path.join(realFolder(path.dirname(joined)), path.basename(joined));
}

function realFolder(dir: string): string {
  try {
    return realpathSync.native(dir);
  } catch {
    const parent = path.dirname(dir);
    if (parent === dir) return dir;
    const real = realFolder(parent);
    const last = path.basename(dir);
    return last === '..' ? path.dirname(real) : last === '.' || last === '' ? real : path.join(real, last);
  }
}
