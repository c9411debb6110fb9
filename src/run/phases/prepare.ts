import type { Ledger, RecoveryReport } from '../../ledger/index.js';
import type { Logger } from '../../log.js';
import { OutputWriter } from '../../outputs/writer.js';
import type { RunContext, RunRequest } from '../context.js';
import { RunControl } from '../control.js';
import { RunEvents } from '../events.js';
import { ServiceContact } from '../serviceContact.js';
import { PhotoSupply } from '../supply.js';
import { checkSteps, type StepsCheck } from '../stepsCheck.js';
import { EXIT } from '../../errors.js';

/** What the run found before its first call, kept for its result. */
export interface Prepared {
  readonly ctx: RunContext;
  /** An output folder that cannot take a file: the run stops with 0 calls; null when it can. */
  readonly outputProblem: string | null;
  readonly recovered: RecoveryReport;
  /** Whether photos started under other steps than the job's let the run go on (stepsCheck.ts). */
  readonly steps: StepsCheck;
}

/**
 * The first phase: the ledger made consistent after whatever stopped the last run, the
 * run's context made, and ExifTool started. Nothing here makes a call. A run whose job's
 * steps changed under started photos is refused here (exit 2, runner.ts), before anything
 * acts on a photo's step.
 */
export async function prepare(
  req: RunRequest,
  ledger: Ledger,
  log: Logger,
  contact?: ServiceContact,
  supply?: PhotoSupply,
): Promise<Prepared> {
  const { config, seams } = req;
  const random = seams?.random ?? Math.random;
  const outputs = new OutputWriter(config, ledger, log, { env: req.env, metadataWriter: seams?.metadataWriter, fs: seams?.outputFs });
  // Before anything else: an output folder that cannot take a file stops the run with 0 calls.
  const outputProblem = outputs.probe();
  // A killed run's temp files are swept beside the start; nothing is written into the folder before it is over.
  if (outputProblem === null) {
    outputs.sweepTemp();
    void outputs.swept().then(
      (n) => n > 0 && log.info({ tempFilesSwept: n }, `${n} temp file(s) a killed run left in the output folder removed`),
      () => {},
    );
  }
  const recovered = ledger.recover();
  ledger.items.releaseQueuedClaims();
  // Before anything acts on an item's step: a photo started under other steps is never
  // finished under these.
  const steps = checkSteps(config, ledger, { redo: req.redoSteps ?? false, keyFps: req.keys.map((k) => k.fingerprint), log });
  const ctx: RunContext = {
    config,
    baseUrl: req.baseUrl,
    keys: req.keys,
    ledger,
    log,
    control: new RunControl(ledger, log, seams?.graceMs),
    // From here every photo that ends (discovery's skips included) is one event.
    events: new RunEvents(ledger, config, req),
    outputs,
    contact: contact ?? new ServiceContact(random, log),
    supply: supply ?? new PhotoSupply(),
    random,
    request: req,
  };
  if (steps.proceed) {
    // ExifTool, before any call: without it no output could carry its metadata (no perl, say).
    const problem = await outputs.startMetadata();
    if (problem !== null)
      ctx.control.stop({ kind: 'config', code: 'METADATA_TOOL', immediate: true, exitCode: EXIT.usage, message: problem });
  }
  return { ctx, outputProblem, recovered, steps };
}
