import { homedir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * How the report names files. By default no absolute path of the machine appears in it:
 * files are named relative to the job's folder (the ledger's without a job file), anything
 * in the home folder as `~/…`, and every absolute path quoted inside a reason is rewritten
 * the same way. Links are relative to the report's own folder, so the report, its
 * thumbnails and the outputs can be moved or shared together.
 */
export interface ReportPaths {
  /** A file or folder as the report shows it. */
  show(abs: string): string;
  /** Free text (a reason, an error) with the known absolute paths in it rewritten. */
  scrub(text: string): string;
  /** An href to a file, from the report's folder (or a file: URL with absolute paths). */
  href(abs: string): string;
}

export interface ReportPathsOptions {
  /** The job's folder (or the ledger's): what names are relative to. */
  readonly root: string;
  /** Where the report is read from: links are relative to it. */
  readonly base: string;
  /** Other folders a reason may quote (input.dir, output.dir), beside root and the home folder. */
  readonly folders?: readonly string[];
  /** Show and link absolute paths (`--absolute-paths`). */
  readonly absolute?: boolean;
  readonly home?: string;
}

export function reportPaths(o: ReportPathsOptions): ReportPaths {
  const home = o.home ?? safeHome();
  const show = (abs: string): string => {
    if (o.absolute) return abs;
    const rel = path.relative(o.root, abs);
    if (rel === '') return '.';
    if (!rel.startsWith('..') && !path.isAbsolute(rel)) return rel;
    if (home && (abs === home || abs.startsWith(home + path.sep))) return `~${abs.slice(home.length)}`;
    // Outside the job's folder and the home folder: relative still, so nothing of the machine's layout above them shows.
    return rel;
  };
  // Longest first, so /a/b/c is rewritten before /a/b.
  const folders = [...new Set([o.root, ...(o.folders ?? []), ...(home ? [home] : [])].filter((f) => f && f !== path.sep))].sort(
    (a, b) => b.length - a.length,
  );
  const pattern = folders.length
    ? new RegExp(folders.map((f) => `${escapeRegExp(f)}(?=$|[${escapeRegExp(path.sep)}\\s'"),:;])`).join('|'), 'g')
    : null;
  const scrub = (text: string): string => {
    if (o.absolute || pattern === null) return text;
    return text.replace(pattern, (m) => {
      const shown = show(m);
      return shown === '.' ? '.' : shown;
    });
  };
  const href = (abs: string): string => {
    if (o.absolute) return pathToFileURL(abs).href;
    return path
      .relative(o.base, abs)
      .split(path.sep)
      .map((seg) => encodeURIComponent(seg))
      .join('/');
  };
  return { show, scrub, href };
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');
}

function safeHome(): string | null {
  try {
    const h = homedir();
    return h && h !== '/' ? h : null;
  } catch {
    return null;
  }
}
