import type Database from 'better-sqlite3';
import { stmt } from './statements.js';

/** What the disk check before a run needs to know from the ledger (src/outputs/diskcheck.ts). */
export interface SpaceFacts {
  /** Photos whose output is still to be written: not done, held, failed or skipped. */
  readonly photos: number;
  /** Their input bytes, where known (a URL input's size is not). */
  readonly inputBytes: number;
  /** Of `photos`, those whose input size is not known. */
  readonly unknownSize: number;
  /** Further names of those photos (duplicates): each gets a copy of the output. */
  readonly extraNames: number;
  /** Photos done whose output and input sizes are both known: what the service's results weighed against their inputs. */
  readonly observed: { readonly photos: number; readonly outputBytes: number; readonly inputBytes: number };
}

const PENDING = "state NOT IN ('done', 'held', 'failed', 'skipped')";

export function readSpaceFacts(db: Database.Database): SpaceFacts {
  const p = stmt<[], { photos: number; bytes: number | null; unknown: number | null }>(
    db,
    `SELECT COUNT(*) AS photos, SUM(size_bytes) AS bytes, SUM(size_bytes IS NULL) AS unknown FROM items WHERE ${PENDING}`,
  ).get()!;
  const gen = Number(stmt<[], { value: string }>(db, "SELECT value FROM meta WHERE key = 'inputs.generation'").get()?.value ?? 0);
  const names = stmt<[number], { n: number }>(
    db,
    `SELECT COUNT(*) AS n FROM inputs n JOIN items i ON i.id = n.item_id WHERE n.seen_gen = ? AND i.${PENDING}`,
  ).get(gen)!.n;
  const o = stmt<[], { photos: number; out: number | null; inb: number | null }>(
    db,
    `SELECT COUNT(*) AS photos, SUM(f.bytes) AS out, SUM(i.size_bytes) AS inb
     FROM items i JOIN output_files f ON f.path = i.output_path
     WHERE i.state = 'done' AND i.size_bytes > 0 AND f.bytes > 0`,
  ).get()!;
  return {
    photos: p.photos,
    inputBytes: p.bytes ?? 0,
    unknownSize: p.unknown ?? 0,
    extraNames: Math.max(0, names - p.photos),
    observed: { photos: o.photos, outputBytes: o.out ?? 0, inputBytes: o.inb ?? 0 },
  };
}
