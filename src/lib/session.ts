import { holderId, Ledger } from '../ledger/index.js';
import type { LockHolder } from '../errors.js';
import { closeLogger, fileLogger, type Logger } from '../log.js';
import { warnNetworkFs } from '../run/networkFs.js';
import type { RunRequest, RunResult } from '../run/context.js';
import { runJob } from '../run/runner.js';
import { ServiceContact } from '../run/serviceContact.js';
import { PhotoSupply } from '../run/supply.js';

/**
 * Open the ledger, take its lock (L6), run the job to its end, and close everything again.
 * Nothing here touches the process (signals, exit, the terminal): the caller's signal
 * stops the run, and the lock is released in `finally`; after a kill -9 the next run finds
 * this process gone and takes the lock over.
 */
export async function runSession(opts: RunRequest): Promise<RunResult> {
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
    const supply = new PhotoSupply();
    stop = opts.onStart?.({ ledger, log, contact, supply, release });
    if (lock.replaced) warnTakeover(log, lock.replaced);
    if (ledger.networkFs !== null) warnNetworkFs(log, 'ledger', ledger.networkFs);
    const result = await runJob(opts, ledger, log, contact, supply);
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
