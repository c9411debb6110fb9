import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import { installClock, VirtualClock } from '../../src/clock.js';
import { KeyStore } from '../../src/ledger/index.js';

/**
 * Key stores in temp folders under a virtual clock from `t0`, for tests of the budget two
 * processes share: each test's stores are closed and their folders removed after it.
 */
export function keyStores(t0: number, fp: string): { stateDir: () => string; open: (dir: string) => KeyStore; clock: () => VirtualClock } {
  const dirs: string[] = [];
  const stores: KeyStore[] = [];
  let restoreClock: () => void;
  let vclock: VirtualClock;
  beforeEach(() => {
    vclock = new VirtualClock(t0);
    restoreClock = installClock(vclock);
  });
  afterEach(() => {
    restoreClock();
    while (stores.length) stores.pop()!.close();
    while (dirs.length) rmSync(dirs.pop()!, { recursive: true, force: true });
  });
  return {
    stateDir() {
      const d = mkdtempSync(path.join(tmpdir(), 'darkroom-keystore-'));
      dirs.push(d);
      return path.join(d, 'state');
    },
    open(dir) {
      const s = KeyStore.openFor(dir, fp);
      stores.push(s);
      return s;
    },
    clock: () => vclock,
  };
}
