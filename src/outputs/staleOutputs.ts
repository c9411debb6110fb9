import { rmSync } from 'node:fs';
import type { Ledger } from '../ledger/index.js';
import type { Logger } from '../log.js';

/**
 * A photo redone under new steps (`--redo-steps`) keeps its old output until the new one is
 * in place; then every file darkroom wrote for it under the old steps that the new output
 * did not overwrite (another extension or name, an old intermediate or sidecar) is removed,
 * so what is on disk comes from one step list. Only files the ledger records as darkroom's
 * are touched. Run per photo as it is done, and over the ledger at the start of a run (a
 * run killed between the two leaves some behind).
 */
export function retireStaleOutputs(ledger: Ledger, log: Logger, itemId?: number): number {
  let removed = 0;
  for (const f of ledger.steps.staleFiles(itemId)) {
    try {
      rmSync(f.path, { force: true });
    } catch (err) {
      log.warn(
        { item: f.itemId, code: (err as NodeJS.ErrnoException).code },
        `could not remove ${f.path}, made under earlier steps: ${(err as Error).message}`,
      );
      continue;
    }
    ledger.steps.forgetFile(f.path);
    log.info({ item: f.itemId, kind: f.kind }, `removed ${f.path}: made under earlier steps, replaced by the output of the current ones`);
    removed++;
  }
  return removed;
}
