import { statSync } from 'node:fs';
import path from 'node:path';
import { stringify } from 'csv-stringify/sync';
import { clock } from '../clock.js';
import { csvCell } from '../display.js';
import { DEFAULT_LEDGER_FILE, resolveLedgerPath, withMode } from '../config/index.js';
import { DarkroomError, toDarkroomError } from '../errors.js';
import { Ledger, type Decision, type ManifestFile, type ManifestTasks } from '../ledger/index.js';
import { openAtomically, type AtomicFile } from '../outputs/atomic.js';
import { checksumFile, type FileFacts } from '../outputs/outputfs.js';
import { resolveJob, type Job, type JobOptions } from './job.js';

/**
 * `darkroom manifest`: what an archive verifies its copy by, written in the output folder:
 * - `manifest-sha256.txt` and `manifest-sha512.txt`: one line per file darkroom wrote there
 *   (outputs, kept intermediates, sidecars), `<hex>  <path under the output folder>`: BagIt's
 *   payload-manifest lines, which `sha256sum -c` and `sha512sum -c` check from that folder;
 * - `provenance.csv`: per output, its input and the input's SHA-256, its own SHA-256, the
 *   steps, the tasks and when it was written.
 * Each checksum is the one recorded when darkroom wrote the file, so the manifest records what
 * darkroom wrote and the check finds what happened since. A file is not read again unless its
 * size or modification time says it changed since it was written: then it is, and one that no
 * longer matches is named (`changed`). A file written before darkroom recorded checksums is
 * read, and its checksums recorded in the ledger for the next time. The files are read from the
 * ledger and written a page at a time: a million outputs take the memory of a few thousand.
 */

const MANIFEST_FILES = ['manifest-sha256.txt', 'manifest-sha512.txt', 'provenance.csv'] as const;

export interface ManifestSummary {
  /** The output folder, where the three files were written. */
  readonly outputDir: string;
  /** Files listed in each manifest. */
  readonly files: number;
  /** Outputs listed in provenance.csv. */
  readonly outputs: number;
  /** The three files written, absolute. */
  readonly written: readonly string[];
  /** Files darkroom wrote that are no longer there (paths under the output folder): left out. */
  readonly missing: readonly string[];
  /** Files whose bytes differ from what darkroom wrote: listed with the checksums it recorded, so a check fails on them. */
  readonly changed: readonly string[];
  /** Files darkroom wrote outside today's output folder (output.dir changed, or the folder moved), absolute: left out. */
  readonly elsewhere: readonly string[];
  /** Files written before darkroom recorded checksums: their checksums were taken now. */
  readonly takenNow: number;
  /** Of those, the checksums now recorded in the ledger (0 when it cannot be written, e.g. a copy on a read-only disk). */
  readonly recordedNow: number;
  /** `--accepted`: only the files of photos whose output a person accepted (`darkroom review`) are listed. */
  readonly acceptedOnly: boolean;
}

export interface ManifestOptions extends JobOptions {
  /** No job: the ledger alone (`ledger`, default ./darkroom.db); the output folder is the one its last run wrote to. */
  readonly job?: Job | string | undefined;
  /** List only the files of photos whose output was accepted in review (`--accepted`). */
  readonly accepted?: boolean | undefined;
}

export async function manifestOfJob(opts: ManifestOptions): Promise<ManifestSummary> {
  try {
    let ledgerFile: string;
    let outputDir: string | undefined;
    let allowNetworkFs = false;
    if (opts.job !== undefined) {
      const { config } = resolveJob(opts.job, opts);
      ledgerFile = config.ledger;
      outputDir = config.output.dir;
      allowNetworkFs = config.allowNetworkFs;
    } else {
      ledgerFile = resolveLedgerPath(opts.cwd ?? process.cwd(), opts.ledger ?? DEFAULT_LEDGER_FILE);
    }
    const ledger = Ledger.open(ledgerFile, { readonly: true });
    let made;
    try {
      const recorded = ledger.getMeta('output.dir');
      outputDir ??= recorded;
      if (outputDir === undefined) {
        throw new DarkroomError(
          'CONFIG',
          `${ledgerFile} does not say where its outputs are (no run has written any yet); name the jobs file: darkroom manifest jobs.yaml`,
        );
      }
      made = await writeManifests(ledger, outputDir, recorded ?? outputDir, opts.accepted ?? false);
    } finally {
      ledger.close();
    }
    const { taken, ...summary } = made;
    return { ...summary, recordedNow: recordTakenNow(ledgerFile, taken, allowNetworkFs) };
  } catch (err) {
    throw toDarkroomError(err);
  }
}

/** Files read from the ledger at a time: the manifests are written as they are read, a page at a time. */
const PAGE = 2_000;

/**
 * A file whose size is what darkroom wrote and that was not modified since is taken to be what
 * it wrote: it is not read again (a million outputs would be hours of reading). The margin
 * allows for a file system's clock against the process's.
 */
const MODIFIED_AFTER_MS = 2_000;

const PROVENANCE_COLUMNS = [
  'input_path',
  'input_sha256',
  'output_path',
  'output_sha256',
  'steps',
  'task_ids',
  'done_at',
  'metadata',
  'input_sidecars',
  'review',
];

/** The three files being written, each to a temp file put in place at the end (outputs/atomic.ts). */
class ManifestWriter {
  private readonly files: AtomicFile[] = [];

  constructor(readonly outputDir: string) {}

  open(): void {
    for (const name of MANIFEST_FILES) this.files.push(openAtomically(path.join(this.outputDir, name), this.outputDir));
    this.files[2]!.append(stringify([], { header: true, columns: PROVENANCE_COLUMNS }));
  }

  /** A page of listed files: their lines in both manifests, the outputs' rows in provenance.csv. */
  add(listed: readonly { rel: string; facts: FileFacts }[], rows: readonly Record<string, string>[]): void {
    this.files[0]!.append(listed.map((f) => manifestLine(f.facts.sha256, f.rel)).join(''));
    this.files[1]!.append(listed.map((f) => manifestLine(f.facts.sha512, f.rel)).join(''));
    // Every cell a spreadsheet would run is defused (csvCell): names and notes come from outside.
    const safe = rows.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, csvCell(v)])));
    if (safe.length > 0) this.files[2]!.append(stringify(safe, { header: false, quoted_match: /^'/, columns: PROVENANCE_COLUMNS }));
  }

  async commit(): Promise<string[]> {
    for (const f of this.files) await f.commit();
    return MANIFEST_FILES.map((name) => path.join(this.outputDir, name));
  }

  abort(): void {
    for (const f of this.files) f.abort();
  }
}

/**
 * Where a file darkroom wrote is now, as the manifests name it: `recorded` is the output folder
 * the last run wrote to; when the job now names another (the folder renamed, or copied with the
 * job to an archive disk), the files are looked for there, at the same paths under it.
 */
function placeOf(file: string, outputDir: string, recorded: string): { abs: string; rel: string } {
  // Nearly every file is under the folder it was written to, named by it: its name is the rest
  // (path.relative, for each of a million files, was a tenth of the manifest's time).
  const under = recorded.endsWith(path.sep) ? recorded : recorded + path.sep;
  if (recorded === outputDir && file.startsWith(under) && !file.includes(`${path.sep}..`) && !file.includes(`${path.sep}.${path.sep}`))
    return { abs: file, rel: file.slice(under.length) };
  const moved = path.relative(recorded, file);
  const abs = recorded !== outputDir && !moved.startsWith('..') && !path.isAbsolute(moved) ? path.join(outputDir, moved) : file;
  return { abs, rel: path.relative(outputDir, abs) };
}

/**
 * The checksums a file is listed with: those recorded when darkroom wrote it (taken now for a
 * file written before they were recorded), and whether it is no longer what darkroom wrote. It
 * is read again only when it has no recorded checksums, or its size or modification time say
 * it may have changed since.
 */
async function checkFile(row: ManifestFile, abs: string): Promise<{ facts: FileFacts; changed: boolean; takenNow: boolean } | null> {
  let st;
  try {
    st = statSync(abs);
  } catch {
    return null;
  }
  if (row.sha256 === null || row.sha512 === null) return { facts: await clock.io(checksumFile(abs)), changed: false, takenNow: true };
  const facts = { bytes: row.bytes, sha256: row.sha256, sha512: row.sha512 };
  if (st.size === row.bytes && st.mtimeMs <= row.writtenMs + MODIFIED_AFTER_MS) return { facts, changed: false, takenNow: false };
  const now = await clock.io(checksumFile(abs));
  return { facts, changed: now.sha256 !== row.sha256 || now.sha512 !== row.sha512, takenNow: false };
}

/**
 * The manifests written a page of the ledger's files at a time (readManifestPage), each file
 * checked as checkFile says; the checksums taken now are recorded in the ledger afterwards
 * (recordTakenNow).
 */
async function writeManifests(
  ledger: Ledger,
  outputDir: string,
  recorded: string,
  acceptedOnly: boolean,
): Promise<ManifestSummary & { readonly taken: TakenNow[] }> {
  const missing: string[] = [];
  const changed: string[] = [];
  const elsewhere: string[] = [];
  const taken: TakenNow[] = [];
  let files = 0;
  let outputs = 0;
  const stepsText = stepsTextOf(ledger);
  const out = new ManifestWriter(outputDir);
  out.open();
  try {
    for (let after: string | null = null; ;) {
      const page = ledger.manifestPage(after, PAGE, acceptedOnly);
      if (page.length === 0) break;
      after = page.at(-1)!.path;
      const tasks = ledger.manifestTasks(page.filter((f) => f.kind === 'output').map((f) => f.itemId));
      const listed: { rel: string; facts: FileFacts }[] = [];
      const rows: Record<string, string>[] = [];
      for (const row of page) {
        const { abs, rel } = placeOf(row.path, outputDir, recorded);
        if ((MANIFEST_FILES as readonly string[]).includes(rel)) continue;
        if (rel.startsWith('..') || path.isAbsolute(rel)) {
          elsewhere.push(abs);
          continue;
        }
        const shown = rel.split(path.sep).join('/');
        const checked = await checkFile(row, abs);
        if (checked === null) {
          missing.push(shown);
          continue;
        }
        if (checked.changed) changed.push(shown);
        if (checked.takenNow) taken.push({ path: row.path, sha256: checked.facts.sha256, sha512: checked.facts.sha512 });
        listed.push({ rel: shown, facts: checked.facts });
        if (row.kind === 'output') rows.push(provenanceRow(row, shown, checked.facts, tasks.get(row.itemId)!, stepsText));
      }
      files += listed.length;
      outputs += rows.length;
      out.add(listed, rows);
    }
    const written = await out.commit();
    return { outputDir, files, outputs, written, missing, changed, elsewhere, takenNow: taken.length, recordedNow: 0, acceptedOnly, taken };
  } catch (err) {
    out.abort();
    throw err;
  }
}

interface TakenNow {
  readonly path: string;
  readonly sha256: string;
  readonly sha512: string;
}

/**
 * The checksums taken now of files written before darkroom recorded them, recorded in the
 * ledger so that the next manifest need not read those files either (OutputFiles.recordChecksums).
 * A ledger that cannot be written (a copy on a read-only disk) keeps them unrecorded: the
 * manifests are written all the same.
 */
function recordTakenNow(ledgerFile: string, taken: readonly TakenNow[], allowNetworkFs: boolean): number {
  if (taken.length === 0) return 0;
  let ledger: Ledger;
  try {
    ledger = Ledger.open(ledgerFile, { allowNetworkFs });
  } catch {
    return 0;
  }
  try {
    let n = 0;
    for (let i = 0; i < taken.length; i += PAGE) n += ledger.outputFiles.recordChecksums(taken.slice(i, i + PAGE));
    return n;
  } catch {
    return 0;
  } finally {
    ledger.close();
  }
}

/** provenance.csv's review cell: "accepted", "rejected: <reason>", or empty when no one has decided yet. */
function reviewCell(decision: Decision | null, reason: string | null): string {
  if (decision === null) return '';
  if (decision === 'accept') return 'accepted';
  return reason ? `rejected: ${reason}` : 'rejected';
}

/**
 * `<hex>  <path>`, as sha256sum writes and reads it. A name with a line break or a
 * backslash gets GNU's escaped form (a leading `\`, then `\n`, `\r`, `\\`), the only one
 * `sha256sum -c` reads back; BagIt would percent-encode them, which no checker reads.
 */
export function manifestLine(hex: string, rel: string): string {
  if (!/[\\\n\r]/.test(rel)) return `${hex}  ${rel}\n`;
  return `\\${hex}  ${rel.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/\r/g, '\\r')}\n`;
}

function provenanceRow(
  row: ManifestFile,
  rel: string,
  facts: FileFacts,
  tasks: ManifestTasks,
  stepsText: (sig: string | null, fallback: readonly string[], redoMode: string | null) => string,
): Record<string, string> {
  const input = row.input;
  const last = new Map<number, string>();
  for (const a of tasks.steps) last.set(a.step, a.taskId);
  const hash = row.contentHash && /^[0-9a-f]{64}$/.test(row.contentHash) ? row.contentHash : '';
  return {
    input_path: input ? (input.kind === 'url' ? input.src : input.name) : (row.relPath ?? ''),
    input_sha256: input?.kind === 'url' ? '' : hash,
    output_path: rel,
    output_sha256: facts.sha256,
    steps: stepsText(
      row.stepsSig,
      tasks.steps.map((a) => a.capability),
      tasks.redoMode,
    ),
    task_ids: [...last.entries()]
      .sort((a, b) => a[0] - b[0])
      .map(([, t]) => t)
      .join('; '),
    done_at: new Date(row.writtenMs).toISOString(),
    metadata: row.meta === null ? '' : row.metaNote ? `${row.meta}: ${row.metaNote}` : row.meta,
    input_sidecars: row.metaSidecars === null ? '' : row.metaSidecars.split('\n').join('; '),
    review: reviewCell(row.decision, row.decisionReason),
  };
}

/** "restore; upscale (resolution=4K)": the step list an output was made under (each list read once). */
function stepsTextOf(ledger: Ledger): (sig: string | null, fallback: readonly string[], redoMode: string | null) => string {
  const lists = new Map<string, Record<string, string>[] | null>();
  return (sig, fallback, redoMode) => {
    if (sig !== null && !lists.has(sig)) {
      const json = ledger.steps.stepsOf(sig);
      lists.set(sig, json === null ? null : (JSON.parse(json) as Record<string, string>[]));
    }
    const steps = sig === null ? null : lists.get(sig)!;
    if (steps === null) return [...new Set(fallback)].join('; ');
    return steps
      .map((step) => withMode(step, redoMode))
      .map((s) => {
        const opts = Object.entries(s).filter(([k]) => k !== 'capability' && k !== 'prompt' && k !== 'negativePrompt');
        return opts.length ? `${s.capability} (${opts.map(([k, v]) => `${k}=${v}`).join(', ')})` : s.capability!;
      })
      .join('; ');
  };
}
