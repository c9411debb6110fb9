import type { Stats } from 'node:fs';
import { clock } from '../../clock.js';
import { discoverInto, logDiscovery } from '../../inputs/discover.js';
import { skipSameFile } from '../../inputs/sameFile.js';
import type { RunResult } from '../context.js';
import type { Prepared } from './prepare.js';
import { stampNewPhotos } from '../stepsCheck.js';
import { EXIT } from '../../errors.js';

/** What the discovery found: the run result's `discovered`. */
export type Discovered = RunResult['discovered'];

/**
 * The second phase: paid results not yet on disk come first, ambiguous creates are put
 * back if the job says so, the inputs are found and reconciled with the ledger
 * (inputs/discover.ts) and the outputs named and given to new names of photos already done
 * (outputs/writer.ts); then whether the disk has room for the results still to come.
 * Still no call. When the output folder cannot take a file (prepare), nothing is discovered
 * and the run halts.
 */
export async function discover(p: Prepared, deferred?: string[]): Promise<Discovered> {
  const { ctx, outputProblem } = p;
  const { config, ledger, log, control, outputs } = ctx;
  // Paid results not yet on disk (an earlier run's outage, full disk, a file in the way) come first.
  ledger.outputs.dueAllNow();
  // L2: ambiguous creates are resent only when an operator says so, here by the config.
  if (config.onAmbiguous === 'resubmit') {
    const ids = ledger.held.resubmittable(config.maxAttempts);
    const r = ledger.held.requeue(['ambiguous'], 'onAmbiguous: resubmit (a second charge is possible)', ids);
    if (r.recreated > 0) log.warn({ items: r.recreated }, 'onAmbiguous: resubmit: held creates sent to be created again');
  }
  let discovered: Discovered = { added: 0, known: 0, skipped: 0, hidden: 0, gone: 0 };
  let found = 0;
  if (outputProblem === null) {
    // Files and URL list, identified by content and reconciled with the ledger; then their outputs.
    const d = await clock.hold(
      (async () => {
        // --follow: a file changed within input.settle may still be being written: the follower takes it once whole.
        const settleFrom = clock.now() - config.input.settleMs;
        const defer = deferred && ((rel: string, st: Stats) => (st.mtimeMs > settleFrom ? (deferred.push(rel), true) : false));
        const d = await discoverInto(config, ledger, {
          keyFps: ctx.keys.map((k) => k.fingerprint),
          adjust: skipSameFile,
          ...(defer ? { defer } : {}),
        });
        logDiscovery(log, d, await outputs.afterDiscovery());
        return d;
      })(),
    );
    found = d.found.length;
    discovered = { ...d.added, skipped: d.found.filter((f) => f.skipReason).length, hidden: d.hidden, gone: d.identity.gone };
  }
  stampNewPhotos(config, ledger);
  outputs.retireStale();
  log.info(
    { found, added: discovered.added, known: discovered.known, recovered: p.recovered, tempFilesSwept: p.tempFilesSwept },
    'run started',
  );
  ctx.events.pull();
  // Room for the results still to come (outputs/diskcheck.ts), before the first upload.
  const diskProblem = outputProblem ?? outputs.spaceProblem();
  if (diskProblem !== null) control.stop({ kind: 'disk', immediate: true, exitCode: EXIT.usage, message: diskProblem });
  return discovered;
}
