import path from 'node:path';
import { CAPABILITIES, isCapability, redact } from '../../api/index.js';
import { clock } from '../../clock.js';
import { DEFAULT_LEDGER_FILE, loadConfig, resolveLedgerPath } from '../../config/index.js';
import { Ledger } from '../../ledger/index.js';
import { buildReport, creditsSpent, formatBytes, reportPaths } from '../../report/index.js';
import { outputBaseDir, outputTarget, writeOutput, type OutputTarget, type WriteStreams } from './outputFile.js';
import { photoCounts } from './format.js';

export interface ReportArgs {
  readonly jobs?: string | undefined;
  readonly ledger?: string | undefined;
  /** Where to write the HTML: a file (`report.html` by default), `-` or /dev/stdout, a device or pipe. */
  readonly out?: string | undefined;
  /** The thumbnails folder; by default `<report name>-thumbs` beside a report file, none for a stream; false (`--no-thumbs`): none. */
  readonly thumbs?: string | false | undefined;
  /** Show and link absolute paths (by default every path is relative: the report can be shared). */
  readonly absolutePaths?: boolean | undefined;
  /** Photos a page holds at most (default PHOTOS_PER_PAGE): more get a summary page and pages of photos. */
  readonly pageSize?: number | undefined;
  readonly cwd?: string | undefined;
}

export interface ReportResult {
  readonly target: OutputTarget;
  /** The lines to print; on stderr when the report itself went to stdout. */
  readonly summary: string;
  readonly bytes: number;
}

/**
 * `darkroom report`: one HTML page from the ledger alone (safe during a run), a row per
 * photo, and a folder of small thumbnails beside it. The thumbnails are files, not data:
 * URIs, because inlined they are what made 3,000 photos 40 MB of HTML; lazily loaded, only
 * those of the rows shown are read.
 */
export async function reportCommand(args: ReportArgs, env: NodeJS.ProcessEnv, streams: WriteStreams = {}): Promise<ReportResult> {
  const cwd = args.cwd ?? process.cwd();
  let ledgerFile: string;
  let inputDir: string | null = null;
  let outputDir: string | null = null;
  let jobsFile: string | null = null;
  let keyEnvs: readonly string[] = ['DARKROOM_API_KEY'];
  let jobCosts: Readonly<Partial<Record<string, number>>> = {};
  if (args.jobs) {
    const config = loadConfig(path.resolve(cwd, args.jobs), { ledger: args.ledger, env });
    ledgerFile = config.ledger;
    inputDir = config.input.dir;
    outputDir = config.output.dir;
    jobsFile = config.file;
    keyEnvs = config.keyEnvs;
    jobCosts = config.credits;
  } else {
    ledgerFile = resolveLedgerPath(cwd, args.ledger ?? DEFAULT_LEDGER_FILE);
  }
  // Classified before the ledger is read: a folder given as --out is a usage error, not a wasted read.
  const target = await outputTarget(args.out ?? 'report.html', cwd);
  const base = outputBaseDir(target, cwd);
  // --no-thumbs: the files are still looked at (format, size), but no thumbnail is made: an
  // archive of a million photos has two million of them to make, hours of work.
  const thumbsDir =
    args.thumbs === false
      ? null
      : args.thumbs
        ? path.resolve(cwd, args.thumbs)
        : target.kind === 'file'
          ? path.join(base, `${path.basename(target.path!).replace(/\.html?$/i, '')}-thumbs`)
          : null;

  const pathOptions = {
    root: jobsFile ? path.dirname(jobsFile) : path.dirname(ledgerFile),
    base,
    folders: [inputDir, outputDir, path.dirname(ledgerFile), base].filter((f): f is string => f !== null),
    absolute: args.absolutePaths === true,
  };
  const paths = reportPaths(pathOptions);
  // An archive of more photos than a page holds: their pages beside the report, in <report name>-photos/.
  const pagesDir = target.kind === 'file' ? path.join(base, `${path.basename(target.path!).replace(/\.html?$/i, '')}-photos`) : null;
  const ledger = Ledger.open(ledgerFile, { readonly: true });
  let data;
  let built;
  try {
    data = ledger.report({ pairLimit: 0, photoLimit: 0 });
    const credits = creditsSpent(data.charged, (cap) => {
      const fromJob = jobCosts[cap];
      if (fromJob !== undefined) return { credits: fromJob, from: 'job' };
      const fromSpec = isCapability(cap) ? CAPABILITIES[cap].credits : null;
      return fromSpec === null ? null : { credits: fromSpec, from: 'spec' };
    });
    // The ledger holds no key (L5); should one ever reach a reason text, it is masked here too.
    const secrets = keyEnvs.map((n) => env[n]?.trim() ?? '').filter((k) => k.length >= 4);
    const pagePaths = pagesDir === null ? null : reportPaths({ ...pathOptions, base: pagesDir });
    built = await buildReport(data, {
      jobsFile,
      ledgerFile,
      inputDir,
      outputDir,
      generatedMs: clock.now(),
      paths,
      thumbsDir,
      credits,
      redact: (s) => redact(s, secrets),
      photos: (after, limit) => ledger.reportPhotos(after, limit),
      pageSize: args.pageSize,
      pages:
        pagesDir === null || pagePaths === null ? null : { dir: pagesDir, paths: pagePaths, summaryHref: pagePaths.href(target.path!) },
    });
  } finally {
    ledger.close();
  }

  await writeOutput(target, built.html, streams);

  const s = data.status;
  const bytes = Buffer.byteLength(built.html);
  const where = target.kind === 'stdout' ? 'report written to stdout' : `report written to ${target.shown}`;
  const pages =
    built.pages.length > 0
      ? `\npages    ${built.photos} photos on ${built.pages.length} pages in ${paths.show(pagesDir!)}, linked from the report`
      : data.photoCount > built.photos
        ? `\npages    ${data.photoCount} photos are more than one page holds: their pages are written beside a report file (give --out FILE)`
        : '';
  const summary =
    `${where} (${formatBytes(bytes)})` +
    (thumbsDir
      ? `; ${built.thumbs} thumbnails in ${paths.show(thumbsDir)}`
      : args.thumbs === false
        ? '; no thumbnails (--no-thumbs)'
        : '; no thumbnails (give --thumbs DIR for them)') +
    pages +
    '\n' +
    `photos   ${photoCounts(s)}; ${s.calls.total} calls\n` +
    `files    ${built.formatChanges} format change${built.formatChanges === 1 ? '' : 's'}` +
    `${built.missingOutputs ? ` · ${built.missingOutputs} done photo${built.missingOutputs === 1 ? '' : 's'} with a missing or unreadable output` : ''}`;
  return { target, summary, bytes };
}
