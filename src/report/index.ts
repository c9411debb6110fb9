import { mkdir, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { clock } from '../clock.js';
import { shownText } from '../display.js';
import type { ReportData, ReportPhoto } from '../ledger/index.js';
import type { CreditsSpent } from './credits.js';
import { renderPhotosPage, renderReport, type PhotoPageEntry } from './html.js';
import { PHOTOS_PER_PAGE } from './pageSize.js';
import { formatChanged, stateGroup, type ReportRow } from './rows.js';
import type { ReportPaths } from './paths.js';
import { inspectImage, mapLimited, type FileFacts } from './thumbs.js';

export { renderReport, type ReportPage } from './html.js';
export { type ReportRow } from './rows.js';
export { type FileFacts, type ThumbOptions } from './thumbs.js';
export { creditsSpent, type CreditsSpent } from './credits.js';
export { formatBytes } from './format.js';
export { reportPaths, type ReportPaths, type ReportPathsOptions } from './paths.js';

export interface BuildOptions {
  /** Absolute paths, shown through `paths`. */
  readonly jobsFile: string | null;
  readonly ledgerFile: string;
  readonly inputDir: string | null;
  readonly outputDir: string | null;
  readonly generatedMs: number;
  readonly paths: ReportPaths;
  /** Where thumbnails are written (absolute), or null for none. */
  readonly thumbsDir: string | null;
  readonly credits: CreditsSpent;
  /** Relative paths in the ledger resolve against this folder (the ledger's own by default). */
  readonly baseDir?: string;
  /** Files read at once (sharp has its own thread pool; this bounds memory on large scans). */
  readonly concurrency?: number;
  /** Longest side of a thumbnail (default 160). */
  readonly thumbSize?: number;
  /** Masks the key, should any ledger text ever carry it. */
  readonly redact?: (s: string) => string;
  /** The photos, a page at a time in path order: after `after` (null: from the first), at most `limit`. */
  readonly photos: (after: string | null, limit: number) => ReportPhoto[];
  /** Photos a page holds at most (default PHOTOS_PER_PAGE): an archive with more gets pages of its own. */
  readonly pageSize?: number;
  /**
   * Where those pages go (a folder beside the report), and their paths (links relative to that
   * folder); null when the report goes to a stream: the summary alone is written.
   */
  readonly pages: { readonly dir: string; readonly paths: ReportPaths; readonly summaryHref: string } | null;
}

export interface BuiltReport {
  readonly html: string;
  readonly photos: number;
  /** Thumbnails the page refers to. */
  readonly thumbs: number;
  /** Done photos whose output file is missing or unreadable. */
  readonly missingOutputs: number;
  readonly formatChanges: number;
  /** The pages of photos written beside the report (absolute), when it has more photos than one page holds. */
  readonly pages: readonly string[];
}

/** What one page's rows add up to. */
interface PageFigures {
  thumbs: number;
  missingOutputs: number;
  formatChanges: number;
}

/**
 * The report: one page with every photo when they fit on one (PHOTOS_PER_PAGE), else a
 * summary page that links to pages of photos written beside it, one page of the ledger read,
 * its files looked at and written at a time, so that a million photos take the memory of a
 * few thousand.
 */
export async function buildReport(data: ReportData, opts: BuildOptions): Promise<BuiltReport> {
  const size = Math.max(1, opts.pageSize ?? PHOTOS_PER_PAGE);
  const redact = opts.redact ?? ((s: string) => s);
  // Names, captions and messages shown as the terminal shows them: controls and bidi overrides visible (src/display.ts).
  const clean = (paths: ReportPaths) => (s: string) => shownText(redact(paths.scrub(s)));
  const page = {
    data,
    jobsFile: opts.jobsFile === null ? null : opts.paths.show(opts.jobsFile),
    ledgerFile: opts.paths.show(opts.ledgerFile),
    inputDir: opts.inputDir === null ? null : opts.paths.show(opts.inputDir),
    outputDir: opts.outputDir === null ? null : opts.paths.show(opts.outputDir),
    generatedMs: opts.generatedMs,
    thumbsHref: opts.thumbsDir === null ? null : opts.paths.href(opts.thumbsDir),
    credits: opts.credits,
    clean: clean(opts.paths),
  };
  if (data.photoCount <= size) {
    const rows = await inspectRows(opts.photos(null, size), opts, opts.paths);
    const f = figuresOf(rows);
    const html = renderReport({ ...page, rows });
    return { html, photos: rows.length, ...f, pages: [] };
  }
  const pages = opts.pages === null ? null : await writePages(data.photoCount, size, opts, clean);
  const html = renderReport({
    ...page,
    rows: [],
    pages: { size, list: pages?.list ?? [], formatChanges: pages?.figures.formatChanges ?? 0, written: pages !== null },
  });
  const f = pages?.figures ?? { thumbs: 0, missingOutputs: 0, formatChanges: 0 };
  return { html, photos: pages?.photos ?? 0, ...f, pages: pages?.files ?? [] };
}

/** Each page of photos read, its files looked at, written; what the summary lists of each and what they add up to. */
async function writePages(
  count: number,
  size: number,
  opts: BuildOptions,
  clean: (paths: ReportPaths) => (s: string) => string,
): Promise<{ list: PhotoPageEntry[]; files: string[]; figures: PageFigures; photos: number }> {
  const { dir, paths } = opts.pages!;
  const name = (i: number) => `photos-${String(i + 1).padStart(4, '0')}.html`;
  const here = opts.paths.href(dir);
  const list: PhotoPageEntry[] = [];
  const files: string[] = [];
  const figures: PageFigures = { thumbs: 0, missingOutputs: 0, formatChanges: 0 };
  let photos = 0;
  await clock.io(mkdir(dir, { recursive: true }));
  for (let i = 0, after: string | null = null; ; i++) {
    const batch = opts.photos(after, size);
    if (batch.length === 0) break;
    after = batch.at(-1)!.path;
    const rows = await inspectRows(batch, opts, paths);
    // A run may add photos while the report is made: the last page links on only when there is one after it.
    const more = opts.photos(after, 1).length > 0;
    const html = renderPhotosPage({
      from: photos + 1,
      of: Math.max(count, photos + rows.length),
      rows,
      thumbsHref: opts.thumbsDir === null ? null : paths.href(opts.thumbsDir),
      summaryHref: opts.pages!.summaryHref,
      previousHref: i === 0 ? null : name(i - 1),
      nextHref: more ? name(i + 1) : null,
      generatedMs: opts.generatedMs,
      clean: clean(paths),
    });
    const file = path.join(dir, name(i));
    await writeAtomically(file, html);
    files.push(file);
    const f = figuresOf(rows);
    figures.thumbs += f.thumbs;
    figures.missingOutputs += f.missingOutputs;
    figures.formatChanges += f.formatChanges;
    photos += rows.length;
    list.push({ href: `${here}/${name(i)}`, first: rows[0]!.photo.path, last: rows.at(-1)!.photo.path, counts: countsOf(rows) });
  }
  await removeStalePages(dir, files.length, name);
  return { list, files, figures, photos };
}

/**
 * Each photo's files read (format, dimensions, size) and thumbnailed where the report shows
 * them: input and output of a done photo, the input of a problem; links from `paths`' base.
 */
async function inspectRows(photos: readonly ReportPhoto[], opts: BuildOptions, paths: ReportPaths): Promise<ReportRow[]> {
  const base = opts.baseDir ?? path.dirname(opts.ledgerFile);
  const abs = (p: string | null) => (p === null ? null : path.resolve(base, p));
  const limit = opts.concurrency ?? Math.max(2, Math.min(4, availableParallelism()));
  // One look per distinct file of the page: duplicates share an output, and thumbnails are named by file.
  const seen = new Map<string, Promise<FileFacts>>();
  const look = (file: string | null, thumb: boolean): Promise<FileFacts> => {
    if (file === null) return inspectImage(null, { dir: null });
    const key = `${thumb ? 't' : 'f'}:${file}`;
    let p = seen.get(key);
    if (!p)
      seen.set(key, (p = inspectImage(file, { dir: thumb ? opts.thumbsDir : null, ...(opts.thumbSize ? { size: opts.thumbSize } : {}) })));
    return p;
  };
  return mapLimited(photos, limit, async (photo): Promise<ReportRow> => {
    const g = stateGroup(photo.state);
    const done = g === 'done';
    const output = done ? abs(photo.outputPath) : null;
    // A URL input has no file: its "input" is the URL, which the report does not fetch.
    const isUrl = /^https?:\/\//i.test(photo.srcPath);
    const input: FileFacts = isUrl
      ? { ok: false, why: 'not recorded', detail: 'a URL input: the service fetched it, darkroom keeps no copy' }
      : await look(abs(photo.srcPath), g !== 'pending');
    return {
      photo,
      input,
      output: done ? await look(output, true) : null,
      href: done && output ? paths.href(output) : null,
    };
  });
}

function figuresOf(rows: readonly ReportRow[]): PageFigures {
  return {
    thumbs: new Set(rows.flatMap((r) => [r.input, r.output]).flatMap((f) => (f?.ok && f.thumb ? [f.thumb] : []))).size,
    missingOutputs: rows.filter((r) => r.output !== null && !r.output.ok).length,
    formatChanges: rows.filter((r) => formatChanged(r.input, r.output)).length,
  };
}

function countsOf(rows: readonly ReportRow[]): PhotoPageEntry['counts'] {
  const counts = { done: 0, failed: 0, held: 0, skipped: 0, gone: 0, pending: 0, changed: 0 };
  for (const r of rows) {
    counts[stateGroup(r.photo.state)]++;
    if (formatChanged(r.input, r.output)) counts.changed++;
  }
  return counts;
}

/** A page written whole or not at all: to a temp file beside it, then renamed. */
async function writeAtomically(file: string, html: string): Promise<void> {
  const tmp = `${file}.${process.pid}.tmp`;
  try {
    await clock.io(writeFile(tmp, html));
    await clock.io(rename(tmp, file));
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}

/** Pages of an earlier report of more photos, past this one's last: removed, so no link leads to stale photos. */
async function removeStalePages(dir: string, kept: number, name: (i: number) => string): Promise<void> {
  const ours = /^photos-\d{4,}\.html$/;
  const keep = new Set(Array.from({ length: kept }, (_, i) => name(i)));
  for (const f of await clock.io(readdir(dir))) {
    if (ours.test(f) && !keep.has(f)) await rm(path.join(dir, f), { force: true });
  }
}
