import type { ItemRow } from '../../ledger/index.js';
import type { RunContext } from '../context.js';

/**
 * Every stage has this one signature: a photo, and the run's context it works in — the
 * key's (KeyContext: its client bound to the call's reservation) for upload, create and
 * poll, the run's for the download. A stage moves the photo on in the ledger and says what
 * the lane or the downloader should know (`R`): feedback on the key, or the download's outcome.
 */
export type Stage<C extends RunContext, R> = (ctx: C, item: ItemRow) => Promise<R>;

/**
 * The one wrapper every stage runs under, the lanes' and the downloader's alike: nothing
 * starts once the ledger is no longer the file at its path (RunControl.ledgerOk: the run
 * halts, exit 2) — the stage's `idle` answer instead — and what a stage says is passed
 * through `after` (the lanes: paused while the service is out, serviceContact.ts).
 */
export function guarded<C extends RunContext, R>(stage: Stage<C, R>, idle: R, after: (r: R) => R = (r) => r): Stage<C, R> {
  return (ctx, item) => (ctx.control.ledgerOk() ? stage(ctx, item).then(after) : Promise.resolve(idle));
}
