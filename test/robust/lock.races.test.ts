import { fork, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { Ledger } from '../../src/ledger/index.js';
import { RunLock } from '../../src/ledger/lock.js';
import { openDatabase } from '../../src/ledger/open.js';
import { systemProbe } from '../../src/ledger/processIdentity.js';
import { makeTempDir } from '../helpers/job.js';

/**
 * Exactly one winner of a stale lock, always: two processes released in the same
 * millisecond race for the lock a dead run left, each as `darkroom run` takes it (open the
 * ledger, take the lock, recover), and exactly one goes on while the other is refused with
 * the busy line naming the winner. 200 races here in seconds: the contenders are two
 * long-lived processes running the built code, each opening the ledger afresh for each race;
 * the dead run is, every tenth race, a process sent SIGKILL as the race starts (it may
 * still be dying when they look: they wait for it), and in the others a lock row naming a
 * pid no process can have. `DARKROOM_LOCK_RACES` sets the
 * number; `npm run test:lock-races` runs 2,000, and the CLI race (lock.race.cli.test.ts)
 * 200 times, by hand.
 */

const CHILD = fileURLToPath(new URL('./lock.contender.child.mjs', import.meta.url));
const RACES = Number(process.env.DARKROOM_LOCK_RACES ?? 200);
const BUSY = /^another darkroom run \(pid (\d+)\) is using the ledger .+; wait for it to end or stop it/;

type Reply = {
  ready?: true;
  opened?: true;
  won?: boolean;
  pid?: number;
  code?: string | null;
  message?: string;
  released?: true;
  error?: string;
};

/** A contender process and the next reply it sends. */
class Contender {
  private readonly replies: Reply[] = [];
  private waiting: ((r: Reply) => void) | undefined;
  readonly child: ChildProcess;

  constructor() {
    this.child = fork(CHILD, [], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
    this.child.on('message', (m: Reply) => {
      const w = this.waiting;
      this.waiting = undefined;
      if (w) w(m);
      else this.replies.push(m);
    });
  }

  next(): Promise<Reply> {
    const r = this.replies.shift();
    if (r) return Promise.resolve(r);
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error('a contender did not answer within 20 s')), 20_000);
      this.waiting = (m) => {
        clearTimeout(t);
        if (m.error) reject(new Error(m.error));
        else resolve(m);
      };
    });
  }

  async ask(m: object): Promise<Reply> {
    this.child.send(m);
    return this.next();
  }
}

/** A lock row left by a run whose process no longer exists: a pid above any pid_max (2^22), on this machine. */
function deadRowLock(file: string): void {
  const me = systemProbe.self();
  const db = openDatabase(file);
  const dead = { ...me, pid: 2 ** 22 + 7, procStart: '1' };
  new RunLock(db, file, { self: () => dead, alive: () => false, startOf: () => null }).acquire({ command: 'run' });
  db.close(); // without releasing it: as a kill -9 leaves it
}

/**
 * A lock held by a real process, sent SIGKILL while it holds it: the race starts at once,
 * as `kill -9` and two runs started together do, so the contenders may find it still
 * alive (dying), a zombie, or gone. Resolves with its exit, for the next race.
 */
async function killedHolderLock(file: string): Promise<{ exited: Promise<unknown>; pid: number }> {
  const holder = new Contender();
  await holder.next();
  expect(await holder.ask({ open: file })).toMatchObject({ opened: true });
  expect(await holder.ask({ go: true })).toMatchObject({ won: true });
  const exited = new Promise((r) => holder.child.once('exit', r));
  holder.child.kill('SIGKILL');
  return { exited, pid: holder.child.pid! };
}

describe('contenders for a stale lock', () => {
  const dir = makeTempDir('darkroom-lock-races-');
  const contenders: Contender[] = [];
  afterAll(() => {
    for (const c of contenders) c.child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it(`exactly one goes on in each of ${RACES} races; the other is refused with the busy line naming it`, async () => {
    const file = path.join(dir, 'darkroom.db');
    Ledger.open(file).close();
    for (let i = 0; i < 2; i++) contenders.push(new Contender());
    await Promise.all(contenders.map((c) => c.next()));
    const outcomes: string[] = [];
    for (let race = 0; race < RACES; race++) {
      let holderGone: Promise<unknown> = Promise.resolve();
      // A loser may name the winner, or a killed holder it still saw alive (dying, on a
      // loaded machine) before the winner found it gone: both are true when said.
      const namedOk = new Set<number>();
      if (race % 10 === 0) {
        const killed = await killedHolderLock(file);
        holderGone = killed.exited;
        namedOk.add(killed.pid);
      } else deadRowLock(file);
      await Promise.all(contenders.map((c) => c.ask({ open: file })));
      // Released in the same tick: both are waiting on their IPC channel.
      for (const c of contenders) c.child.send({ go: true });
      const [a, b] = await Promise.all(contenders.map((c) => c.next()));
      const winners = [a!, b!].filter((r) => r.won);
      const loser = [a!, b!].find((r) => !r.won);
      const named = loser?.message ? BUSY.exec(loser.message)?.[1] : undefined;
      outcomes.push(
        winners.length === 1 && loser?.code === 'LOCKED' && (Number(named) === winners[0]!.pid || namedOk.has(Number(named)))
          ? 'one won'
          : `race ${race}: ${JSON.stringify([a, b])}`,
      );
      for (const [i, r] of [a!, b!].entries()) if (r.won) await contenders[i]!.ask({ release: true });
      await holderGone;
    }
    expect(outcomes).toEqual(Array.from({ length: RACES }, () => 'one won'));
  }, 120_000);
});
