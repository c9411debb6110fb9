import { type HeldItem, type Ledger } from '../ledger/index.js';
import { KeyStore } from '../keystore/store.js';
import { stateDirFrom } from './stateDir.js';

/**
 * `darkroom retry --held`: the held creates re-queued no longer hold a task slot in their
 * keys' machine-wide budgets. The operator decided: the next run may create again at once
 * instead of waiting until such a task could have ended. Found by the X-Request-Id each
 * create was sent with, in the store of the key that sent it — or, for a create a stopped
 * run left in flight (its row still a create's), by its photo.
 *
 * Returns a note for stderr when a store could not be written: the slots then stay held
 * until they expire, which delays the run but never breaks a limit.
 */
export function releaseHeldSlots(ledger: Ledger, held: readonly HeldItem[], env: NodeJS.ProcessEnv, allowNetworkFs = false): string {
  const byKey = new Map<string, { itemId: number; ref: string }[]>();
  for (const h of held) {
    const fp = ledger.items.get(h.id)?.key_fp;
    if (!fp || !h.sentRequestId) continue;
    byKey.set(fp, [...(byKey.get(fp) ?? []), { itemId: h.id, ref: h.sentRequestId }]);
  }
  if (byKey.size === 0) return '';
  const owner = ledger.keyFacts.ownerId();
  const dir = stateDirFrom(env);
  for (const [fp, refs] of byKey) {
    let store: KeyStore | undefined;
    try {
      store = KeyStore.openFor(dir, fp, { allowNetworkFs });
      store.releaseHeldCreates(owner, refs);
    } catch (err) {
      return `darkroom: note: ${(err as Error).message}; the re-queued creates keep their task slots until they expire`;
    } finally {
      store?.close();
    }
  }
  return '';
}
