import type { Ledger } from '../ledger/index.js';
import type { Logger } from '../log.js';
import type { RunRequest, RunResult } from './context.js';
import { connect } from './phases/connect.js';
import { discover } from './phases/discover.js';
import { drive } from './phases/drive.js';
import { finish, refuse } from './phases/finish.js';
import { prepare } from './phases/prepare.js';
import type { ServiceContact } from './serviceContact.js';
import type { PhotoSupply } from './supply.js';

/**
 * One `darkroom run`, in its phases (docs/ARCHITECTURE.md § Flow), each a file of phases/:
 *
 * 1. prepare: the ledger recovered, the job's steps checked, the run's context made, ExifTool started;
 * 2. discover: started, and going on beside the next two: the inputs found and recorded a batch
 *    at a time, their outputs named, each batch's photos the lanes' at once; the disk's room
 *    checked before the first upload; the connection waits only for the first photos needing calls;
 * 3. connect: each key's budget, client and lane; the base URL and the keys' usage checked;
 * 4. drive: the lanes and the downloader, to the end of what this run can do once the
 *    discovery has ended (with `follow`, it follows the folder after its walk, and ends only
 *    when the run halts it: follow.ts);
 * 5. finish: the figures, the exit code, the summary event.
 *
 * The session around it (lib/session.ts) opened `ledger`, took its lock (§ L6) and made `log`;
 * `contact` and `supply` are the session's when its display shows an outage's countdown and
 * the discovery's count.
 */
export async function runJob(
  req: RunRequest,
  ledger: Ledger,
  log: Logger,
  contact?: ServiceContact,
  supply?: PhotoSupply,
): Promise<RunResult> {
  const prepared = await prepare(req, ledger, log, contact, supply);
  if (!prepared.steps.proceed) return refuse(prepared, await prepared.ctx.outputs.swept());
  try {
    const discovery = discover(prepared);
    let connected;
    try {
      await discovery.ready;
      connected = await connect(prepared.ctx);
    } catch (err) {
      // The discovery goes on beside: it ends with the run, before the ledger is closed.
      prepared.ctx.control.crashed(err);
      await discovery.finished;
      throw err;
    }
    let credits;
    try {
      credits = await drive(prepared.ctx, connected, discovery);
    } finally {
      await connected.close();
    }
    return finish(prepared, await discovery.finished, connected.guards, credits, await prepared.ctx.outputs.swept());
  } finally {
    await prepared.ctx.outputs.end();
  }
}
