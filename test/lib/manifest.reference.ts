import { existsSync } from 'node:fs';
import path from 'node:path';
import { stringify } from 'csv-stringify/sync';
import { withMode } from '../../src/config/index.js';
import { csvCell } from '../../src/display.js';
import type { Ledger, StandingDecision, WrittenFileRow } from '../../src/ledger/index.js';
import { manifestLine } from '../../src/lib/manifest.js';
import { checksumFile, type FileFacts } from '../../src/outputs/outputfs.js';

/**
 * The three texts `darkroom manifest` wrote before it read the ledger by pages (src/lib/manifest.ts
 * as it was: every file darkroom wrote read in one list, every file read again), kept here
 * as the reference the manifest's output is held equal to, byte for byte, whatever run made
 * the ledger. Reads the ledger only; writes nothing.
 */
export async function manifestBefore(ledger: Ledger, outputDir: string): Promise<[string, string, string]> {
  const listed: { row: WrittenFileRow; rel: string; facts: FileFacts }[] = [];
  const decisions = ledger.reviews.decisions();
  for (const row of ledger.outputFiles.writtenFiles()) {
    const rel = path.relative(outputDir, row.path);
    if (['manifest-sha256.txt', 'manifest-sha512.txt', 'provenance.csv'].includes(rel)) continue;
    if (rel.startsWith('..') || path.isAbsolute(rel) || !existsSync(row.path)) continue;
    const now = await checksumFile(row.path);
    const facts = row.sha256 !== null && row.sha512 !== null ? { bytes: row.bytes, sha256: row.sha256, sha512: row.sha512 } : now;
    listed.push({ row, rel: rel.split(path.sep).join('/'), facts });
  }
  const sha256 = listed.map((f) => manifestLine(f.facts.sha256, f.rel)).join('');
  const sha512 = listed.map((f) => manifestLine(f.facts.sha512, f.rel)).join('');
  const csv = stringify(
    listed
      .filter((f) => f.row.kind === 'output')
      .map((f) =>
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
  return [sha256, sha512, csv];
}

function reviewCell(d: StandingDecision | undefined): string {
  if (d === undefined) return '';
  if (d.decision === 'accept') return 'accepted';
  return d.reason ? `rejected: ${d.reason}` : 'rejected';
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
