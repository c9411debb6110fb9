import { realpathSync } from 'node:fs';

/**
 * One real file reached by two names (two links to one folder, a link to a photo beside
 * the photo) would be paid for twice: every name after the first, in discovery's sorted
 * order, is recorded as skipped, naming the first.
 */
export function skipSameFile<T extends { relPath: string; srcPath: string; skipReason?: string | null }>(found: readonly T[]): T[] {
  const first = new Map<string, string>();
  return found.map((f) => {
    if (f.skipReason) return f;
    let real: string;
    try {
      real = realpathSync(f.srcPath);
    } catch {
      return f; // not a local file (a URL input), or gone: the upload stage will say
    }
    const seen = first.get(real);
    if (seen === undefined) {
      first.set(real, f.relPath);
      return f;
    }
    return { ...f, skipReason: `same file as ${seen} (reached through a symbolic link); processed once, under that name` };
  });
}
