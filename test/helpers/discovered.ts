import { createHash } from 'node:crypto';
import type { Ledger, ReconcileReport } from '../../src/ledger/index.js';

/** A photo a test's discovery "found": a name, and as much of the rest as the test cares about. */
export interface FoundPhoto {
  /** Path under input.dir, with '/'. */
  readonly relPath: string;
  /** Absolute path; default `/in/<relPath>`. */
  readonly srcPath?: string;
  readonly sizeBytes?: number;
  /** Refused before any call (not an image, empty): recorded as skipped. */
  readonly skipReason?: string | null;
  /** What identifies it (a file's bytes, as discovery hashes them); default its name, so every name is a photo of its own. */
  readonly content?: string | Buffer;
}

/**
 * Items put in a ledger the way a run's discovery puts them: reconciled by content
 * (src/ledger/discovery.ts), so a test starts from a ledger production could have made.
 * New items get ids in the list's order. Like a run's, each call is everything found: a
 * photo not started yet and left out is marked gone.
 */
export function discovered(ledger: Ledger, photos: readonly (FoundPhoto | string)[]): ReconcileReport {
  const files = photos.map((p) => {
    const f: FoundPhoto = typeof p === 'string' ? { relPath: p } : p;
    const src = f.srcPath ?? `/in/${f.relPath}`;
    return {
      name: f.relPath,
      src,
      sizeBytes: f.sizeBytes ?? 1,
      mtimeMs: null,
      contentHash: sha256(f.content ?? `test photo ${f.relPath}`),
      skipReason: f.skipReason ?? null,
    };
  });
  return ledger.discovery.reconcile(files, [], { keyFps: [] });
}

function sha256(data: string | Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}
