import { holderId, Ledger } from '../ledger/index.js';
import type { LockHolder } from '../errors.js';
import { closeLogger, fileLogger, type Logger } from '../log.js';
import { warnNetworkFs } from '../run/networkFs.js';
import { runJob, type RunHooks, type RunnerOptions, type RunResult } from '../run/runner.js';
import { ServiceContact } from '../run/serviceContact.js';

/**
 * One run of a job as both the library's `run()` and `darkroom run` make it (§ Flow, § L6):
 * the runner's options but what this opens (the ledger, the log), and what only the CLI gives.
 */
export interface SessionOptions
  extends RunHooks, Pick<RunnerOptions, 'config' | 'baseUrl' | 'keys' | 'onActivity' | 'guards' | 'redoSteps' | 'transport' | 'env'> {
  /** Where the keys' machine-wide stores live (stateDir.ts). */
  readonly stateDir: string;
  /** The caller's logger; else JSON lines to the job's log file (`log.file`, beside the ledger). */
  readonly logger?: Logger | undefined;
  /** Warnings and errors as short human lines too (the CLI's stderr); only with the default logger. */
  readonly human?: ((line: string) => void) | undefined;
  readonly breakLock?: string | undefined;
  /**
   * Called once the ledger is locked and the logger made, before any work: the CLI starts
   * its display here (`contact` says whether the service answers, for an outage's
   * countdown) and hooks the lock's release to the process's exit. The function it
   * returns, if any, is called when the run ends, before the ledger closes.
   */
  readonly onStart?:
    | ((s: {
        readonly ledger: Ledger;
        readonly log: Logger;
        readonly contact: ServiceContact;
        readonly release: () => void;
      }) => (() => void) | void)
    | undefined;
}

/**
 * Open the ledger, take its lock (L6), run the job to its end, and close everything again.
 * Nothing here touches the process (signals, exit, the terminal): the caller's signal
 * stops the run, and the lock is released in `finally`; after a kill -9 the next run finds
 * this process gone and takes the lock over.
 */
export async function runSession(opts: SessionOptions): Promise<RunResult> {
  const { config, keys } = opts;
  const open: { ledger?: Ledger; log?: Logger; ownLog?: boolean } = {};
  let release = () => {};
  let stop: (() => void) | void = undefined;
  try {
    const ledger = (open.ledger = Ledger.open(config.ledger, { allowNetworkFs: config.allowNetworkFs }));
    // L6: before anything writes, recover() above all (it marks `sending` creates ambiguous).
    const lock = ledger.acquireRunLock({ command: 'run', breakLock: opts.breakLock });
    release = lock.release;
    const log = (open.log =
      opts.logger ??
      fileLogger(config.log.file, config.log.level, {
        secrets: keys.map((k) => k.key),
        ...(opts.human ? { human: opts.human, humanHint: config.log.file } : {}),
        // Warnings name the photo by its input path, not its row number.
        itemName: (id) => ledger.items.get(id)?.rel_path,
      }));
    open.ownLog = opts.logger === undefined;
    const contact = new ServiceContact(Math.random, log);
    stop = opts.onStart?.({ ledger, log, contact, release });
    if (lock.replaced) warnTakeover(log, lock.replaced);
    if (ledger.networkFs !== null) warnNetworkFs(log, 'ledger', ledger.networkFs);
    const result = await runJob({
      config,
      baseUrl: opts.baseUrl,
      keys,
      ledger,
      log,
      stateDir: opts.stateDir,
      serviceContact: contact,
      ...(opts.guards ? { guards: opts.guards } : {}),
      ...(opts.onEvent ? { onEvent: opts.onEvent } : {}),
      ...(opts.onActivity ? { onActivity: opts.onActivity } : {}),
      ...(opts.redoSteps ? { redoSteps: true } : {}),
      ...(opts.signal ? { signal: opts.signal } : {}),
      ...(opts.transport ? { transport: opts.transport } : {}),
      ...(opts.env ? { env: opts.env } : {}),
    });
    return result;
  } finally {
    if (stop) stop();
    open.log?.flush();
    if (open.log && open.ownLog) closeLogger(open.log);
    release();
    open.ledger?.close();
  }
}

function warnTakeover(log: Logger, r: LockHolder): void {
  log.warn(
    { pid: r.pid, host: r.host, command: r.command, startedMs: r.startedMs },
    `took over the ledger lock left by darkroom ${r.command} ${holderId(r)} (no longer running, or --break-lock)`,
  );
}
