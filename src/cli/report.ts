import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { redact } from '../api/index.js';
import { clock } from '../clock.js';
import { loadConfig, resolveLedgerPath } from '../config/index.js';
import { Ledger } from '../ledger/index.js';
import { buildReport } from '../report/index.js';

export interface ReportArgs {
  readonly jobs?: string | undefined;
  readonly ledger?: string | undefined;
  /** Where to write the HTML; `report.html` in the current folder by default. */
  readonly out?: string | undefined;
}

/** Before/after pairs in one report; the rest are counted ("and N more") to keep the file a few MB. */
export const PAIR_LIMIT = 500;

/**
 * `darkroom report`: one self-contained HTML file from the ledger alone (safe during a run),
 * thumbnails inlined as data: URIs so it opens with no server and no network.
 */
export async function reportCommand(args: ReportArgs, env: NodeJS.ProcessEnv): Promise<{ file: string; summary: string }> {
  let ledgerFile: string;
  let outputDir: string | null = null;
  let jobsFile: string | null = null;
  let keyEnvs: readonly string[] = ['DARKROOM_API_KEY'];
  if (args.jobs) {
    const config = loadConfig(args.jobs, { ledger: args.ledger, env });
    ledgerFile = config.ledger;
    outputDir = config.output.dir;
    jobsFile = config.file;
    keyEnvs = config.keyEnvs;
  } else {
    ledgerFile = resolveLedgerPath(process.cwd(), args.ledger ?? 'darkroom.db');
  }
  const file = path.resolve(args.out ?? 'report.html');

  const ledger = Ledger.open(ledgerFile, { readonly: true });
  let data;
  try {
    data = ledger.report({ pairLimit: PAIR_LIMIT });
  } finally {
    ledger.close();
  }

  // The ledger holds no key (L5); should one ever reach a reason text, it is masked here too.
  const secrets = keyEnvs.map((n) => env[n]?.trim() ?? '').filter((k) => k.length >= 4);
  const built = await buildReport(data, {
    jobsFile,
    ledgerFile,
    outputDir,
    generatedMs: clock.now(),
    redact: (s) => redact(s, secrets),
  });

  await mkdir(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  try {
    await clock.io(writeFile(tmp, built.html, 'utf8'));
    await clock.io(rename(tmp, file));
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }

  const s = data.status;
  const shown = built.pairs < s.done ? `${built.pairs} of ${s.done} before/after pairs shown` : `${built.pairs} before/after pairs`;
  const summary =
    `report written to ${file}\n` +
    `photos   ${s.total} total · ${s.done} done · ${s.failed} failed · ${s.held} held · ${s.pending} pending; ${s.calls.total} calls\n` +
    `images   ${shown}${built.incomplete ? `, ${built.incomplete} with a missing or unreadable image` : ''}; ${(Buffer.byteLength(built.html) / 1_048_576).toFixed(1)} MB`;
  return { file, summary };
}
