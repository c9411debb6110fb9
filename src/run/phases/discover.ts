import type { Stats } from 'node:fs';
import { clock } from '../../clock.js';
import { discoverInto, logDiscovery, newCounts, type DiscoverIntoOptions, type DiscoverySummary } from '../../inputs/discover.js';
import { sameFileCheck, type SameFileCheck } from '../../inputs/sameFile.js';
import { readUrlList } from '../../inputs/urls.js';
import type { RunContext, RunResult } from '../context.js';
import type { Prepared } from './prepare.js';
import { Follower } from '../follow.js';
import { stampNewPhotos } from '../stepsCheck.js';
import { EXIT } from '../../errors.js';

/** What the discovery found: the run result's `discovered`. */
export type Discovered = RunResult['discovered'];

const NOTHING: Discovered = { added: 0, known: 0, skipped: 0, hidden: 0, gone: 0 };

/** The run's discovery, under way beside the work. */
export interface Discovering {
  /**
   * The lanes may start: photos that need calls are recorded (at once on a resume, after the
   * first batch that has one on a first run) and the disk's room for them checked; or the
   * discovery is over.
   */
  readonly ready: Promise<void>;
  /** What it found, once it ended (stopped half way: what it had recorded, nothing marked gone). */
  readonly finished: Promise<Discovered>;
  /** End it where it is (the run takes no new photos): what it recorded stays, nothing is marked gone. */
  halt(): void;
}

/**
 * The second phase, started here and going on beside the next two: paid results not yet on
 * disk come first, ambiguous creates are put back if the job says so; then the inputs are
 * found and recorded a batch at a time (inputs/discover.ts, ledger/discovery.ts), each batch's
 * outputs named (outputs/writer.ts) and its photos given to the lanes at once (the run's
 * PhotoSupply); the full decode of each new photo stays before its upload, since a batch is
 * recorded only once decoded. At the end, the names that waited for the whole discovery, new
 * names of photos already done given their outputs, photos gone marked. The disk's room is
 * checked before the first upload against the photos recorded by then (on a resume, the whole
 * archive), and again at the end against them all. No call is made here. When the output folder
 * cannot take a file (prepare), nothing is discovered and the run halts.
 *
 * With `--follow` the walk leaves a file changed within input.settle to the follower, and once
 * the walk is complete the follower (follow.ts) goes on recording what arrives, a batch at a
 * time like the walk, until the run halts it: the discovery, and so the run's supply of photos,
 * ends only then.
 */
export function discover(p: Prepared): Discovering {
  const { ctx, outputProblem } = p;
  const { config, ledger, log, control, outputs, supply } = ctx;
  // Paid results not yet on disk (an earlier run's outage, full disk, a file in the way) come first.
  ledger.outputs.dueAllNow();
  // L2: ambiguous creates are resent only when an operator says so, here by the config.
  if (config.onAmbiguous === 'resubmit') {
    const ids = ledger.held.resubmittable(config.maxAttempts);
    const r = ledger.held.requeue(['ambiguous'], 'onAmbiguous: resubmit (a second charge is possible)', ids);
    if (r.recreated > 0) log.warn({ items: r.recreated }, 'onAmbiguous: resubmit: held creates sent to be created again');
  }
  stampNewPhotos(config, ledger);
  outputs.retireStale();
  log.info({ recovered: p.recovered }, 'run started');
  if (outputProblem !== null) {
    supply.end();
    control.stop({ kind: 'disk', immediate: true, exitCode: EXIT.usage, message: outputProblem });
    return { ready: Promise.resolve(), finished: Promise.resolve(NOTHING), halt: () => {} };
  }
  // A bad URL line stops the run here (exit 2), before anything is recorded.
  const urls = config.input.urls === null ? [] : readUrlList(config.input.urls);
  outputs.beginDiscovery();
  let readied = false;
  let markReady = () => {};
  const ready = new Promise<void>((resolve) => {
    markReady = () => {
      if (readied) return;
      readied = true;
      // Room for the results to come (outputs/diskcheck.ts), before the first upload.
      roomCheck(ctx, true);
      resolve();
    };
  });
  const needsCalls = () => ctx.keys.some((k) => ledger.keyFacts.needsCalls(k.fingerprint));
  // A resume: the ledger has work already, which the lanes start on while the walk goes on.
  if (needsCalls()) markReady();
  let halted = false;
  let follower: Follower | undefined;
  const stopped = () => halted || control.stopped;
  const afterBatch = () => {
    if (!readied && needsCalls()) markReady();
  };
  // --follow: a file changed within input.settle may still be being written: the follower takes it once whole.
  const follow = ctx.request.follow === true;
  const deferred: string[] = [];
  const settleFrom = clock.now() - config.input.settleMs;
  const defer = (rel: string, st: Stats) => {
    if (!follow || st.mtimeMs <= settleFrom) return false;
    deferred.push(rel);
    return true;
  };
  const sameFile = sameFileCheck(config.input.dir);
  let complete = false;
  const walked = walk(ctx, urls, { stopped, afterBatch, sameFile, defer }).then(
    (d) => {
      complete = d.complete;
      markReady();
      const discovered = { ...d.added, skipped: d.counts.skipped, hidden: d.counts.hidden, gone: d.identity.gone };
      log.info(
        { found: d.counts.files + d.urls, added: discovered.added, known: discovered.known, complete: d.complete },
        d.complete ? 'discovery finished' : `discovery stopped with the run after ${d.counts.files} file(s); the next run looks again`,
      );
      // The whole archive is known now: its room is checked again (a shortfall stops new uploads and creates).
      if (d.complete) roomCheck(ctx, false);
      return discovered;
    },
    (err: unknown) => {
      // A failure of the walk or the ledger: the run stops, and the error is the run's (finish rethrows it).
      control.crashed(err);
      markReady();
      return NOTHING;
    },
  );
  // The supply ends with the walk; with --follow, once the run stops following (follow.ts).
  const finished = walked.then(async (discovered) => {
    try {
      if (follow && complete && !stopped()) {
        supply.walked();
        follower = new Follower(ctx, sameFile);
        await follower.follow(deferred);
      }
    } catch (err) {
      control.crashed(err);
    } finally {
      supply.end();
    }
    return discovered;
  });
  const halt = () => {
    halted = true;
    void follower?.stop();
  };
  return { ready, finished, halt };
}

/**
 * The walk itself: each batch recorded, named, stamped with the job's steps and handed to
 * the lanes (synchronously, so no lane sees a photo before its output names); at the end what
 * only the whole discovery can tell. Null when the run stopped before the walk ended.
 */
async function walk(
  ctx: RunContext,
  urls: ReturnType<typeof readUrlList>,
  o: Required<Pick<DiscoverIntoOptions, 'stopped' | 'defer'>> & { readonly afterBatch: () => void; readonly sameFile: SameFileCheck },
): Promise<DiscoverySummary> {
  const { config, ledger, log, outputs, supply } = ctx;
  const { afterBatch } = o;
  const counts = newCounts();
  const d = await discoverInto(config, ledger, {
    keyFps: ctx.keys.map((k) => k.fingerprint),
    adjust: o.sameFile,
    urls,
    counts,
    stopped: o.stopped,
    defer: o.defer,
    onBatch: (batch, pass) => {
      outputs.afterBatch({ ids: batch.inputIds, gen: pass.gen });
      stampNewPhotos(config, ledger);
      // From here every photo that ends (discovery's skips included) is one event.
      ctx.events.pull();
      afterBatch();
      supply.more(pass.counts.names);
    },
  });
  if (!d.complete) return d;
  logDiscovery(log, d, await outputs.afterDiscovery());
  stampNewPhotos(config, ledger);
  ctx.events.pull();
  return d;
}

/**
 * Whether the disk has room for the results still to come (outputs/diskcheck.ts), against the
 * photos the ledger knows now. Before the first upload a shortfall stops the run before any
 * call; at the end of the discovery it stops new uploads and creates, and paid work goes on.
 */
function roomCheck(ctx: RunContext, first: boolean): void {
  const problem = ctx.outputs.spaceProblem();
  if (problem !== null) ctx.control.stop({ kind: 'disk', immediate: first, exitCode: EXIT.usage, message: problem });
}
