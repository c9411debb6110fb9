import { realpathSync } from 'node:fs';
import path from 'node:path';

type Named = { relPath: string; srcPath: string; skipReason?: string | null };

/** A discovery's same-file check (sameFileCheck): each batch's files, with whether it met a name before. */
export type SameFileCheck = <T extends Named>(found: readonly T[], seen: (relPath: string) => boolean) => T[];

/**
 * One real file reached by two names (two links to one folder, a link to a photo beside
 * the photo) is one photo under one name: every name after the first, in discovery's order,
 * is recorded as skipped, naming the first.
 *
 * Made once per discovery and handed each batch in turn. It keeps in memory only the files
 * reached through a link (a name whose real path is not itself); a file reached directly is
 * found again by its name, which the ledger says whether this discovery recorded (`seen`), so
 * an archive of a million photos costs no list of a million paths. A followed folder's new
 * files (`run --follow`) go through the walk's check.
 */
export function sameFileCheck(dir: string | null): SameFileCheck {
  let realDir: string | null = null;
  try {
    realDir = dir === null ? null : realpathSync(dir);
  } catch {
    realDir = null;
  }
  /** Files reached through a link: real path → the first name that reached it. */
  const linked = new Map<string, string>();
  return <T extends Named>(found: readonly T[], seen: (relPath: string) => boolean): T[] => {
    const here = new Set<string>();
    return found.map((f) => {
      here.add(f.relPath);
      if (f.skipReason) return f;
      let real: string;
      try {
        real = realpathSync(f.srcPath);
      } catch {
        return f; // not a local file (a URL input), or gone: the upload stage will say
      }
      const first = linked.get(real) ?? firstName(real);
      if (first !== undefined && first !== f.relPath) {
        return { ...f, skipReason: `same file as ${first} (reached through a symbolic link); processed once, under that name` };
      }
      if (realDir === null || real !== path.join(realDir, f.relPath)) linked.set(real, f.relPath);
      return f;
    });

    /** A file's own name under input.dir, when discovery has already met it by that name. */
    function firstName(real: string): string | undefined {
      if (realDir === null) return undefined;
      const rel = path.relative(realDir, real);
      if (rel === '' || rel.startsWith('..') || path.isAbsolute(rel)) return undefined;
      const name = rel.split(path.sep).join('/');
      return here.has(name) || seen(name) ? name : undefined;
    }
  };
}
