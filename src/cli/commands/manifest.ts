import { shownText } from '../../display.js';
import path from 'node:path';
import { manifestOfJob, type ManifestSummary } from '../../lib/manifest.js';
import { EXIT } from '../../errors.js';

export interface ManifestArgs {
  readonly jobs?: string | undefined;
  readonly ledger?: string | undefined;
  readonly json?: boolean | undefined;
  readonly cwd?: string | undefined;
  /** `--accepted`: only the accepted photos' files. */
  readonly accepted?: boolean | undefined;
}

/** At most this many names of missing or changed files in the text; the rest are counted. */
const NAMES_SHOWN = 10;

/**
 * `darkroom manifest`: the checksum manifests and provenance.csv written in the output
 * folder (lib/manifest.ts); the lines to print and the exit code: 1 when a file darkroom
 * wrote is missing, no longer what it wrote, or outside the output folder.
 */
export async function manifestCommand(args: ManifestArgs): Promise<{ text: string; exitCode: number; summary: ManifestSummary }> {
  const cwd = args.cwd ?? process.cwd();
  const summary = await manifestOfJob({
    ...(args.jobs !== undefined ? { job: path.resolve(cwd, args.jobs) } : {}),
    ...(args.ledger !== undefined ? { ledger: args.ledger } : {}),
    cwd,
    accepted: args.accepted,
  });
  const exitCode = summary.missing.length > 0 || summary.changed.length > 0 || summary.elsewhere.length > 0 ? EXIT.someFailed : EXIT.ok;
  if (args.json) return { text: JSON.stringify(summary), exitCode, summary };
  // Relative to where the command was typed when the folder is below it, else absolute.
  const rel = (p: string) => {
    const r = path.relative(cwd, p);
    return r === '' ? '.' : r.startsWith('..') || path.isAbsolute(r) ? p : r;
  };
  const dir = rel(summary.outputDir);
  const lines = [
    `manifest ${summary.files} file${summary.files === 1 ? '' : 's'} (${summary.outputs}${summary.acceptedOnly ? ' accepted' : ''} output${summary.outputs === 1 ? '' : 's'}) in ${dir}/: ${summary.written.map((w) => path.basename(w)).join(', ')}`,
  ];
  if (summary.changed.length > 0) {
    lines.push(
      `changed  ${names(summary.changed)}: not what darkroom wrote; listed with the checksums darkroom recorded, so a check names them`,
    );
  }
  if (summary.missing.length > 0)
    lines.push(`missing  ${names(summary.missing)}: darkroom wrote them and they are gone; left out of the manifests`);
  if (summary.elsewhere.length > 0) {
    lines.push(
      `outside  ${summary.elsewhere.length} file(s) darkroom wrote are outside ${dir}/ (e.g. ${shownText(rel(summary.elsewhere[0]!))}): was output.dir changed, or the folder moved? Left out; run the manifest where the outputs were written`,
    );
  }
  if (summary.takenNow > 0) {
    const kept =
      summary.recordedNow === summary.takenNow
        ? ' and recorded in the ledger'
        : summary.recordedNow > 0
          ? ` (${summary.recordedNow} recorded in the ledger)`
          : ' (not recorded: the ledger could not be written)';
    lines.push(`note     ${summary.takenNow} file(s) were written before darkroom recorded checksums: theirs were taken now${kept}`);
  }
  lines.push(`check    cd ${shownText(shellQuote(dir))} && sha256sum -c manifest-sha256.txt`);
  return { text: lines.join('\n'), exitCode, summary };
}

function names(list: readonly string[]): string {
  const shown = list.slice(0, NAMES_SHOWN).map(shownText).join(', ');
  return list.length > NAMES_SHOWN ? `${shown} and ${list.length - NAMES_SHOWN} more` : shown;
}

function shellQuote(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}
