import { existsSync } from 'node:fs';
import Database from 'better-sqlite3';
import { startSim, type RunningSim } from '../../src/sim/server.js';

/** Wait until a read-only look at the ledger satisfies `ok` (a run is writing it). */
export async function waitForLedger(file: string, ok: (db: Database.Database) => boolean, timeoutMs = 30_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (existsSync(file)) {
      try {
        const db = new Database(file, { readonly: true, fileMustExist: true });
        try {
          if (ok(db)) return;
        } finally {
          db.close();
        }
      } catch {
        // not migrated yet
      }
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('the ledger never reached the expected state');
}

/** Read-only SQL over a ledger file (tests look; only src/ledger writes). */
export function look<T = Record<string, unknown>>(file: string, sql: string, ...params: unknown[]): T[] {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    return db.prepare(sql).all(...params) as T[];
  } finally {
    db.close();
  }
}

export function count(db: Database.Database, sql: string): number {
  return (db.prepare(sql).get() as { n: number }).n;
}

/**
 * Every create is accepted and then answered a minute late: while a run is up, its creates
 * are surely in flight (`sending`), which a second writer's recover() would mark ambiguous.
 */
export async function slowCreates(key: string, seed: number): Promise<RunningSim> {
  return startSim({
    keys: [key],
    seed,
    latency: { medianMs: 500, sigma: 0.1 },
    faults: { slowAnswer: { probability: 1, delayMs: 60_000, createsOnly: true } },
  });
}

/** The simulator's count of calls with `key` that arrived, whatever the answer. */
export function callsSeen(sim: RunningSim, fp: string): number {
  return sim.model.audit().keys[fp]?.calls ?? 0;
}
