import { TERMINAL, type ItemState, type ReportPhoto } from '../ledger/index.js';
import type { FileFacts } from './thumbs.js';

/** One photo's row: its ledger facts, what its files are, and the link to its full-size output. */
export interface ReportRow {
  readonly photo: ReportPhoto;
  readonly input: FileFacts;
  /** Null for a photo with no output (not done). */
  readonly output: FileFacts | null;
  /** The output's link, relative to the report (null: no output). */
  readonly href: string | null;
}

/** The states a row is filtered by: each ledger state belongs to one. */
export const STATE_GROUPS = ['done', 'failed', 'held', 'skipped', 'gone', 'pending'] as const;
export type StateGroup = (typeof STATE_GROUPS)[number];

export function stateGroup(state: string): StateGroup {
  // The ends group by themselves, everything not terminal is pending (src/ledger/transitions.ts).
  return TERMINAL.has(state as ItemState) ? (state as StateGroup) : 'pending';
}

/** sharp's format names, with the one spelling difference that is no change. */
export function formatChanged(input: FileFacts, output: FileFacts | null): boolean {
  if (!input.ok || !output?.ok) return false;
  const norm = (f: string) => (f === 'jpg' ? 'jpeg' : f);
  return norm(input.format) !== norm(output.format);
}
