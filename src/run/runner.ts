import type { Ledger } from '../ledger/index.js';
import type { Logger } from '../log.js';
import type { RunRequest, RunResult } from './context.js';
import { connect } from './phases/connect.js';
import { discover } from './phases/discover.js';
import { drive } from './phases/drive.js';
import { finish, refuse } from './phases/finish.js';
import { Follower } from './follow.js';
import { prepare } from './phases/prepare.js';
import type { ServiceContact } from './serviceContact.js';

/**
 * One `darkroom run`, in its phases (docs/ARCHITECTURE.md § Flow), each a file of phases/:
 *
 * 1. prepare: the ledger recovered, the job's steps checked, the run's context made, ExifTool started;
 * 2. discover: the inputs found and reconciled, their outputs named, the disk's room checked;
 * 3. connect: each key's budget, client and lane; the base URL and the keys' usage checked;
 * 4. drive: the lanes and the downloader, to the end of what this run can do; with `follow`,
 *    the follower (follow.ts) records new photos beside them until the run is stopped;
 * 5. finish: the figures, the exit code, the summary event.
 *
 * The session around it (lib/session.ts) opened `ledger`, took its lock (§ L6) and made `log`;
 * `contact` is the session's when its display shows an outage's countdown.
 */
export async function runJob(req: RunRequest, ledger: Ledger, log: Logger, contact?: ServiceContact): Promise<RunResult> {
  const prepared = await prepare(req, ledger, log, contact);
  if (!prepared.steps.proceed) return refuse(prepared);
  try {
    // --follow: files still being written when the run starts are left to the follower.
    const deferred: string[] = [];
    const discovered = await discover(prepared, req.follow ? deferred : undefined);
    const connected = await connect(prepared.ctx);
    let credits;
    const follower = req.follow ? new Follower(prepared.ctx) : undefined;
    try {
      await follower?.start(deferred);
      credits = await drive(prepared.ctx, connected);
    } finally {
      await follower?.stop();
      await connected.close();
    }
    return finish(prepared, discovered, connected.guards, credits);
  } finally {
    await prepared.ctx.outputs.end();
  }
}
