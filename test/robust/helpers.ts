import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Ledger } from '../../src/ledger/index.js';
import type { TestJob } from '../helpers/job.js';

/** The simulator's name for an uploaded image: the first 16 hex digits of its SHA-256. */
export function sourceIdOf(file: string): string {
  return createHash('sha256').update(readFileSync(file)).digest('hex').slice(0, 16);
}

/** Creates the simulator saw for each input photo, by its path relative to the input folder. */
export function createsPerPhoto(job: TestJob, rels: Iterable<string>, createsPerSource: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const rel of rels) out[rel] = createsPerSource[sourceIdOf(path.join(job.inputDir, rel))] ?? 0;
  return out;
}

/** A file ledger for a simulation, so a test can read it with SQL afterwards. */
export function fileLedger(job: TestJob): Ledger {
  return Ledger.open(job.ledgerFile);
}

/** The photos of a TestJob, as `simulate` made them. */
export function photoPaths(job: { sizes: Map<string, unknown> }): string[] {
  return [...job.sizes.keys()];
}
