import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import type { CallRecord } from '../../src/api/index.js';
import { installClock, VirtualClock } from '../../src/clock.js';
import { KeyStore } from '../../src/keystore/store.js';

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

/** A call's answer as the client reports it to the budget (a poll's, 200, unless `extra` says else). */
export function callAnswer(atMs: number, sentRequestId: string, httpStatus = 200, extra: Partial<CallRecord> = {}): CallRecord {
  return {
    atMs,
    method: 'GET',
    endpoint: '/api/v1/tasks/{businessType}/{taskId}',
    path: '/x',
    httpStatus,
    businessCode: httpStatus === 200 ? 0 : -1000,
    requestId: 'srv',
    sentRequestId,
    durationMs: 5,
    errorCode: null,
    sent: true,
    retryAfterMs: null,
    rateLimit: null,
    ...extra,
  };
}
