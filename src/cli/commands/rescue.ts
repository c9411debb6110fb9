import type { Rescue } from '../../ledger/index.js';

/** What the operator reads after a run stopped because its ledger was deleted (see ledger/fileCheck.ts, rescueDeleted). */
export function rescueLines(rescue: Rescue | null, file: string): string[] {
  if (!rescue) return [];
  if ('savedTo' in rescue) {
    const held = `saved: what this run held of the ledger is in ${rescue.savedTo} (every task paid for, every create in doubt)`;
    return [
      rescue.pathFree
        ? `${held}: put it back with \`mv ${rescue.savedTo} ${file}\` and run again`
        : `${held}: run again with --ledger ${rescue.savedTo}, or put it in the place of ${file} if the file there now is not the one to keep`,
    ];
  }
  return [
    `could not save a copy of the deleted ledger (${rescue.error}): restore ${file} from a backup before running again, or darkroom will create every unfinished photo again`,
  ];
}
