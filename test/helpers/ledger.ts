import { existsSync } from 'node:fs';
import Database from 'better-sqlite3';
import { Ledger } from '../../src/ledger/index.js';
import { startSim, type RunningSim } from '../../src/sim/server.js';

/**
 * Wait until the ledger a run is writing, read beside it as `darkroom status` reads it
 * (through its API, read-only), satisfies `ok`.
 */
export async function waitForLedger(file: string, ok: (ledger: Ledger) => boolean, timeoutMs = 30_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (existsSync(file)) {
      try {
        const ledger = Ledger.open(file, { readonly: true });
        try {
          if (ok(ledger)) return;
        } finally {
          ledger.close();
        }
      } catch {
        // not migrated yet
      }
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('the ledger never reached the expected state');
}

/** Creates in flight: a photo `submitting` has its create `sending` (§ L1), in the one transaction that began it. */
export const createsInFlight = (l: Ledger): number => l.status().states.submitting;

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
