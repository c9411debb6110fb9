import { existsSync } from 'node:fs';
import path from 'node:path';
import { stringify } from 'csv-stringify/sync';
import { clock } from '../clock.js';
import { csvCell } from '../display.js';
import { DEFAULT_LEDGER_FILE, resolveLedgerPath, withMode } from '../config/index.js';
import { DarkroomError, toDarkroomError } from '../errors.js';
import { Ledger, type StandingDecision, type WrittenFileRow } from '../ledger/index.js';
import { writeBufferAtomically } from '../outputs/atomic.js';
import { checksumFile, type FileFacts } from '../outputs/outputfs.js';
import { resolveJob, type Job, type JobOptions } from './job.js';

/**
 * `darkroom manifest`: what an archive verifies its copy by, written in the output folder:
 * - `manifest-sha256.txt` and `manifest-sha512.txt`: one line per file darkroom wrote there
 *   (outputs, kept intermediates, sidecars), `<hex>  <path under the output folder>`: BagIt's
 *   payload-manifest lines, which `sha256sum -c` and `sha512sum -c` check from that folder;
 * - `provenance.csv`: per output, its input and the input's SHA-256, its own SHA-256, the
 *   steps, the tasks and when it was written.
 * Each checksum is the one recorded when darkroom wrote the file; every file is read again
 * and one that no longer matches is named (`changed`), so the manifest records what
 * darkroom wrote and the check finds what happened since.
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
    if (opts.job !== undefined) {
      const { config } = resolveJob(opts.job, opts);
      ledgerFile = config.ledger;
      outputDir = config.output.dir;
    } else {
      ledgerFile = resolveLedgerPath(opts.cwd ?? process.cwd(), opts.ledger ?? DEFAULT_LEDGER_FILE);
    }
    const ledger = Ledger.open(ledgerFile, { readonly: true });
    try {
      const recorded = ledger.getMeta('output.dir');
      outputDir ??= recorded;
      if (outputDir === undefined) {
        throw new DarkroomError(
          'CONFIG',
          `${ledgerFile} does not say where its outputs are (no run has written any yet); name the jobs file: darkroom manifest jobs.yaml`,
        );
      }
      return await writeManifests(ledger, outputDir, recorded ?? outputDir, opts.accepted ?? false);
    } finally {
      ledger.close();
    }
  } catch (err) {
    throw toDarkroomError(err);
  }
}

/**
 * `recorded`: the output folder the last run wrote to. When the job now names another (the
 * folder renamed, or copied with the job to an archive disk), the files are looked for
 * there, at the same paths under it.
 */
async function writeManifests(ledger: Ledger, outputDir: string, recorded: string, acceptedOnly: boolean): Promise<ManifestSummary> {
  const missing: string[] = [];
  const changed: string[] = [];
  const elsewhere: string[] = [];
  let takenNow = 0;
  const listed: { row: WrittenFileRow; rel: string; facts: FileFacts }[] = [];
  const decisions = ledger.reviews.decisions();
  // --accepted: the files of accepted photos, their outputs with their sidecars and intermediates.
  const files = ledger.outputFiles.writtenFiles().filter((f) => !acceptedOnly || decisions.get(f.itemId)?.decision === 'accept');
  for (const written of files) {
    const moved = path.relative(recorded, written.path);
    const row =
      recorded !== outputDir && !moved.startsWith('..') && !path.isAbsolute(moved)
        ? { ...written, path: path.join(outputDir, moved) }
        : written;
    const rel = path.relative(outputDir, row.path);
    if ((MANIFEST_FILES as readonly string[]).includes(rel)) continue;
    if (rel.startsWith('..') || path.isAbsolute(rel)) {
      elsewhere.push(row.path);
      continue;
    }
    const shown = rel.split(path.sep).join('/');
    if (!existsSync(row.path)) {
      missing.push(shown);
      continue;
    }
    const now = await clock.io(checksumFile(row.path));
    if (row.sha256 === null || row.sha512 === null) takenNow++;
    else if (row.sha256 !== now.sha256 || row.sha512 !== now.sha512) changed.push(shown);
    const facts = row.sha256 !== null && row.sha512 !== null ? { bytes: row.bytes, sha256: row.sha256, sha512: row.sha512 } : now;
    listed.push({ row, rel: shown, facts });
  }
  const sha256 = listed.map((f) => manifestLine(f.facts.sha256, f.rel)).join('');
  const sha512 = listed.map((f) => manifestLine(f.facts.sha512, f.rel)).join('');
  const outputs = listed.filter((f) => f.row.kind === 'output');
  // Every cell a spreadsheet would run is defused (csvCell): names and notes come from outside.
  const csv = stringify(
    outputs.map((f) =>
      Object.fromEntries(
        Object.entries({ ...provenanceRow(ledger, f.row, f.rel, f.facts), review: reviewCell(decisions.get(f.row.itemId)) }).map(
          ([k, v]) => [k, csvCell(v)],
        ),
      ),
    ),
    {
      header: true,
      quoted_match: /^'/,
      columns: [
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
      ],
    },
  );
  const texts = [sha256, sha512, csv];
  const written = MANIFEST_FILES.map((name) => path.join(outputDir, name));
  for (const [i, file] of written.entries()) await writeBufferAtomically(file, Buffer.from(texts[i]!), outputDir);
  return { outputDir, files: listed.length, outputs: outputs.length, written, missing, changed, elsewhere, takenNow, acceptedOnly };
}

/** provenance.csv's review cell: "accepted", "rejected: <reason>", or empty when no one has decided yet. */
function reviewCell(d: StandingDecision | undefined): string {
  if (d === undefined) return '';
  if (d.decision === 'accept') return 'accepted';
  return d.reason ? `rejected: ${d.reason}` : 'rejected';
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

function provenanceRow(ledger: Ledger, row: WrittenFileRow, rel: string, facts: FileFacts): Record<string, string> {
  const item = ledger.items.get(row.itemId);
  const input = row.inputId !== null ? ledger.inputs.inputsOf(row.itemId).find((i) => i.id === row.inputId) : undefined;
  const attempts = ledger.outputFiles.attemptsOf(row.itemId).filter((a) => a.status === 'SUCCESS');
  const last = new Map<number, string>();
  for (const a of attempts) last.set(a.step_index, a.task_id);
  const hash = item?.content_hash && /^[0-9a-f]{64}$/.test(item.content_hash) ? item.content_hash : '';
  return {
    input_path: input ? (input.kind === 'url' ? input.src : input.name) : (item?.rel_path ?? ''),
    input_sha256: input?.kind === 'url' ? '' : hash,
    output_path: rel,
    output_sha256: facts.sha256,
    steps: stepsText(
      ledger,
      item?.steps_sig ?? null,
      attempts.map((a) => a.capability),
      ledger.reviews.redoModeOf(row.itemId),
    ),
    task_ids: [...last.entries()]
      .sort((a, b) => a[0] - b[0])
      .map(([, t]) => t)
      .join('; '),
    done_at: new Date(row.writtenMs).toISOString(),
    metadata: row.meta === null ? '' : row.metaNote ? `${row.meta}: ${row.metaNote}` : row.meta,
    input_sidecars: row.metaSidecars === null ? '' : row.metaSidecars.split('\n').join('; '),
  };
}

/** "restore; upscale (resolution=4K)": the step list the output was made under. */
function stepsText(ledger: Ledger, sig: string | null, fallback: readonly string[], redoMode: string | null): string {
  const json = sig === null ? null : ledger.steps.stepsOf(sig);
  if (json === null) return [...new Set(fallback)].join('; ');
  const steps = JSON.parse(json) as Record<string, string>[];
  return steps
    .map((step) => withMode(step, redoMode))
    .map((s) => {
      const opts = Object.entries(s).filter(([k]) => k !== 'capability' && k !== 'prompt' && k !== 'negativePrompt');
      return opts.length ? `${s.capability} (${opts.map(([k, v]) => `${k}=${v}`).join(', ')})` : s.capability!;
    })
    .join('; ');
}
