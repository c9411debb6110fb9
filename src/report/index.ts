import { shownText } from '../display.js';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import type { ReportData } from '../ledger/index.js';
import type { CreditsSpent } from './credits.js';
import { renderReport } from './html.js';
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
}

export interface BuiltReport {
  readonly html: string;
  readonly photos: number;
  /** Thumbnails the page refers to. */
  readonly thumbs: number;
  /** Done photos whose output file is missing or unreadable. */
  readonly missingOutputs: number;
  readonly formatChanges: number;
}

/**
 * Each photo's files read (format, dimensions, size) and thumbnailed where the report shows
 * them: input and output of a done photo, the input of a problem; then the page.
 */
export async function buildReport(data: ReportData, opts: BuildOptions): Promise<BuiltReport> {
  const base = opts.baseDir ?? path.dirname(opts.ledgerFile);
  const abs = (p: string | null) => (p === null ? null : path.resolve(base, p));
  const limit = opts.concurrency ?? Math.max(2, Math.min(4, availableParallelism()));
  // One look per distinct file: duplicates share an output, and thumbnails are named by file.
  const seen = new Map<string, Promise<FileFacts>>();
  const look = (file: string | null, thumb: boolean): Promise<FileFacts> => {
    if (file === null) return inspectImage(null, { dir: null });
    const key = `${thumb ? 't' : 'f'}:${file}`;
    let p = seen.get(key);
    if (!p)
      seen.set(key, (p = inspectImage(file, { dir: thumb ? opts.thumbsDir : null, ...(opts.thumbSize ? { size: opts.thumbSize } : {}) })));
    return p;
  };
  const rows = await mapLimited(data.photos, limit, async (photo): Promise<ReportRow> => {
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
      href: done && output ? opts.paths.href(output) : null,
    };
  });
  const redact = opts.redact ?? ((s: string) => s);
  const thumbsHref = opts.thumbsDir === null ? null : opts.paths.href(opts.thumbsDir);
  const html = renderReport({
    data,
    jobsFile: opts.jobsFile === null ? null : opts.paths.show(opts.jobsFile),
    ledgerFile: opts.paths.show(opts.ledgerFile),
    inputDir: opts.inputDir === null ? null : opts.paths.show(opts.inputDir),
    outputDir: opts.outputDir === null ? null : opts.paths.show(opts.outputDir),
    generatedMs: opts.generatedMs,
    rows,
    thumbsHref,
    credits: opts.credits,
    // Names, captions and messages shown as the terminal shows them: controls and bidi overrides visible (src/display.ts).
    clean: (s) => shownText(redact(opts.paths.scrub(s))),
  });
  const thumbs = new Set(rows.flatMap((r) => [r.input, r.output]).flatMap((f) => (f?.ok && f.thumb ? [f.thumb] : []))).size;
  return {
    html,
    photos: rows.length,
    thumbs,
    missingOutputs: rows.filter((r) => r.output !== null && !r.output.ok).length,
    formatChanges: rows.filter((r) => formatChanged(r.input, r.output)).length,
  };
}
