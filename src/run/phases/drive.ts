import type { KeyContext, RunContext } from '../context.js';
import { creditsShortfall, type CreditsShortfall } from '../credits.js';
import { downloadLoop, Patience } from '../stages/downloader.js';
import type { Connected } from './connect.js';
import type { Discovering } from './discover.js';

/**
 * The fourth phase: every key's lane and the downloader run together, beside the discovery
 * still recording photos (discover.ts: the lanes take each batch as it is recorded), until
 * the discovery has ended and nothing is left that this run can do. A run that takes no new
 * photos any more (a limit, a full disk) ends its discovery once its lanes are done, rather
 * than wait for the rest of the archive. Downloads whose result URL expired hand their photo
 * back to be polled for a fresh one; lanes end when only downloads are left, so a hand-back
 * after that runs them again. Then the watchers and guards end, and after a 20601 the
 * account's credits are read against what the work left needs (credits.ts).
 */
export async function drive(ctx: RunContext, connected: Connected, discovery: Discovering): Promise<CreditsShortfall | undefined> {
  const { control } = ctx;
  const { keys, guards } = connected;
  const patience = new Patience(ctx.config.limits.downloadPatienceMinutes * 60_000);
  let handedBack = 0;
  for (;;) {
    const before = handedBack;
    let lanesDone = false;
    const downloads = downloadLoop(ctx, {
      patience,
      lanesDone: () => lanesDone,
      handBack: () => {
        handedBack++;
        for (const k of keys) k.lane.wake();
      },
    });
    try {
      await Promise.all(keys.map((k) => k.lane.run()));
    } finally {
      lanesDone = true;
      ctx.events.notify();
      await downloads;
    }
    if (control.stopped || handedBack === before) break;
  }
  // Lanes end before the supply only when they take no new photo: the rest of the walk would change nothing.
  if (!ctx.supply.done) discovery.halt();
  await discovery.finished;
  connected.lanesOver.abort();
  await Promise.all(connected.watching);
  await guards?.end();
  guards?.finish();
  if (control.accountStop?.creditsOnly && !control.stopped) {
    const first: KeyContext | undefined = keys[0]?.ctx;
    return creditsShortfall(ctx.ledger, ctx.config, first?.client, first?.budget, control.abort, ctx.log);
  }
  return undefined;
}
