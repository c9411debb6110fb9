import { existsSync, readdirSync } from 'node:fs';
import { clock } from '../../clock.js';
import type { Config } from '../../config/index.js';
import { DEFAULT_LEDGER_FILE, resolveLedgerPath } from '../../config/ledgerPath.js';
// From its module, not ledger/index.js: the 20 modules of the whole ledger are not needed here.
import { ProgressReader } from '../../ledger/read/progress.js';
import { keyFingerprints, readSummary } from '../../lib/status.js';
import { stateDirFrom } from '../../lib/stateDir.js';
import { formatProgress } from './format.js';

export interface StatusArgs {
  readonly jobs?: string | undefined;
  readonly ledger?: string | undefined;
  readonly json?: boolean | undefined;
}

/** Redraw period of `status --watch`. */
const WATCH_EVERY_MS = 2000;

interface Target {
  readonly file: string;
  readonly config: Config | null;
  readonly keys: readonly string[] | undefined;
  /** Where the keys' stores are (DARKROOM_STATE_DIR…): the slots they count busy. */
  readonly stateDir: string;
  /** The jobs file as named on the command line, for the hints. */
  readonly jobs?: string | undefined;
}

async function target(args: StatusArgs, env: NodeJS.ProcessEnv): Promise<Target> {
  const stateDir = stateDirFrom(env);
  const jobs = args.jobs ?? (args.ledger === undefined ? await jobsFileHere(env) : undefined);
  if (!jobs) return { file: resolveLedgerPath(process.cwd(), args.ledger ?? DEFAULT_LEDGER_FILE), config: null, keys: undefined, stateDir };
  // Imported only here: config brings zod and yaml (~0.2 s to load), which a status by
  // --ledger alone does without.
  const { loadConfig } = await import('../../config/index.js');
  const config = loadConfig(jobs, { ledger: args.ledger, env });
  // The job's keys are listed even before they made a call, by fingerprint only, when set.
  return { file: config.ledger, config, keys: keyFingerprints(config, env), jobs, stateDir };
}

/**
 * `darkroom status` with no argument in a job's folder: the one job file there whose ledger
 * exists, when there is no ledger by the default name (a job that has run is found, not
 * answered with "start a job").
 */
async function jobsFileHere(env: NodeJS.ProcessEnv): Promise<string | undefined> {
  if (existsSync(resolveLedgerPath(process.cwd(), DEFAULT_LEDGER_FILE))) return undefined;
  const { loadConfig } = await import('../../config/index.js');
  const ran = readdirSync(process.cwd())
    .filter((f) => /\.ya?ml$/i.test(f))
    .filter((f) => {
      try {
        return existsSync(loadConfig(f, { env }).ledger);
      } catch {
        return false; // not a job file, or not a valid one
      }
    });
  return ran.length === 1 ? ran[0] : undefined;
}

function render(reader: ProgressReader, t: Target, json: boolean): string {
  const { progress, status, summary } = readSummary(reader, t.config, t.keys, t.stateDir);
  if (json) return JSON.stringify(summary);
  return formatProgress(progress, status, t.file, t.config ? 'jobs' : 'default', t.jobs, reader.runHolder());
}

/** `darkroom status`: read from the ledger alone, safe while a run writes (WAL); never creates a ledger. */
export async function statusCommand(args: StatusArgs, env: NodeJS.ProcessEnv): Promise<string> {
  const t = await target(args, env);
  const reader = ProgressReader.open(t.file);
  try {
    return render(reader, t, args.json ?? false);
  } finally {
    reader.close();
  }
}

/**
 * `darkroom status --watch`: a fresh picture every 2 s until the signal aborts (Ctrl-C).
 * Yields frames; the entry point prints them (clearing the screen between frames on a
 * terminal; with --json, one object per line).
 */
export async function* watchStatus(
  args: StatusArgs,
  env: NodeJS.ProcessEnv,
  signal: AbortSignal,
  everyMs = WATCH_EVERY_MS,
): AsyncGenerator<string> {
  const t = await target(args, env);
  const reader = ProgressReader.open(t.file);
  try {
    while (!signal.aborted) {
      yield render(reader, t, args.json ?? false);
      try {
        await clock.sleep(everyMs, signal);
      } catch {
        return;
      }
    }
  } finally {
    reader.close();
  }
}
