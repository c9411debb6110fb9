import { availableParallelism } from 'node:os';
import path from 'node:path';
import type { ReportData } from '../ledger/index.js';
import { renderReport, type ReportPair } from './html.js';
import { makeThumb, mapLimited, type ThumbOptions } from './thumbs.js';

export { renderReport, type ReportPage, type ReportPair } from './html.js';
export { makeThumb, mapLimited, type Thumb, type ThumbOptions } from './thumbs.js';
export { throughputSvg } from './chart.js';

export interface BuildOptions {
  readonly jobsFile: string | null;
  readonly ledgerFile: string;
  readonly outputDir: string | null;
  readonly generatedMs: number;
  /** Relative paths in the ledger resolve against this folder (the ledger's own by default). */
  readonly baseDir?: string;
  /** Thumbnails made at once (sharp has its own thread pool; this bounds memory on large scans). */
  readonly concurrency?: number;
  readonly thumbs?: ThumbOptions;
  readonly redact?: (s: string) => string;
}

export interface BuiltReport {
  readonly html: string;
  readonly pairs: number;
  /** Pairs with at least one image missing or unreadable. */
  readonly incomplete: number;
}

/** Thumbnails for every pair the ledger read returned, then the page. */
export async function buildReport(data: ReportData, opts: BuildOptions): Promise<BuiltReport> {
  const base = opts.baseDir ?? path.dirname(opts.ledgerFile);
  const abs = (p: string | null) => (p === null ? null : path.resolve(base, p));
  const jobs = data.done.flatMap((item) => [abs(item.srcPath), abs(item.outputPath)]);
  const limit = opts.concurrency ?? Math.max(2, Math.min(4, availableParallelism()));
  const thumbs = await mapLimited(jobs, limit, (file) => makeThumb(file, opts.thumbs));
  const pairs: ReportPair[] = data.done.map((item, i) => ({ item, before: thumbs[2 * i]!, after: thumbs[2 * i + 1]! }));
  const html = renderReport({
    data,
    jobsFile: opts.jobsFile,
    ledgerFile: opts.ledgerFile,
    outputDir: opts.outputDir,
    generatedMs: opts.generatedMs,
    pairs,
    ...(opts.redact ? { redact: opts.redact } : {}),
  });
  return { html, pairs: pairs.length, incomplete: pairs.filter((p) => !p.before.ok || !p.after.ok).length };
}
