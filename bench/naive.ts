/**
 * The yardsticks: the clients most people would write first, run against the same model
 * under the same kind of virtual clock. Per key, three workers (one per task slot) each take
 * a photo and carry it through: upload → create → poll → next step → download. Calls of a
 * key leave at least 600 ms apart (the spec's 100 a minute: a key given less, as in the
 * call-bound workloads, meets 429s); nothing knows about the hour window. A 429 is obeyed
 * minimally: the key's calls wait Retry-After, then the call is sent again. (The service
 * counts a refused call in its windows: a peer whose other workers kept calling while one
 * waited would keep a full window full, and never finish.)
 *
 * Three peers, by how they poll:
 * - `naive`  every 3 s (issue 3's yardstick, the "naive" column of W1–W4);
 * - `poll2s` every 2 s;
 * - `wait3s` once at the create's waitTime, then every 3 s (at once when there is no hint).
 */
import { performance } from 'node:perf_hooks';
import { ApiClient, CAPABILITIES, isApiError, type Capability } from '../src/api/index.js';
import { clock, installClock, VirtualClock } from '../src/clock.js';
import { inProcessResultFetch, inProcessTransport } from '../src/sim/inprocess.js';
import { SimModel } from '../src/sim/model.js';
import { VIRTUAL_START_MS } from '../test/helpers/simulate.js';
import { boundOf } from './bound.js';
import { figuresFrom, type RunFigures } from './figures.js';
import { photoPath, tinyPng } from './photos.js';
import { virtualLimitMs } from './simulate.js';
import { benchKeys, limitsOf, simOptionsFor, type Workload } from './workloads.js';

const NAIVE = { pollEveryMs: 3_000, callGapMs: 600, slots: 3, maxAttempts: 3 } as const;

export type Peer = 'naive' | 'poll2s' | 'wait3s';

const PEERS: Record<Peer, { everyMs: number; firstAtHint: boolean }> = {
  naive: { everyMs: 3_000, firstAtHint: false },
  poll2s: { everyMs: 2_000, firstAtHint: false },
  wait3s: { everyMs: 3_000, firstAtHint: true },
};

/** One key's calls, spaced `gapMs` apart in the order they asked. */
class Gate {
  private nextAt = 0;

  constructor(private readonly gapMs: number) {}

  async call<T>(send: () => Promise<T>): Promise<T> {
    for (;;) {
      const now = clock.now();
      const at = Math.max(now, this.nextAt);
      this.nextAt = at + this.gapMs;
      if (at > now) await clock.sleep(at - now);
      try {
        return await send();
      } catch (err) {
        if (isApiError(err) && err.kind === 'retry-later') {
          const wait = err.retryAfterMs ?? NAIVE.pollEveryMs;
          this.nextAt = Math.max(this.nextAt, clock.now() + wait);
          await clock.sleep(wait);
          continue;
        }
        throw err;
      }
    }
  }
}

/** One photo, start to end; true when its output was fetched. */
async function processPhoto(
  client: ApiClient,
  gate: Gate,
  fetchResult: ReturnType<typeof inProcessResultFetch>,
  steps: readonly Capability[],
  i: number,
  peer: (typeof PEERS)[Peer],
): Promise<boolean> {
  let image = (await gate.call(() => client.upload(tinyPng(i), photoPath(i), 'image/png'))).imageUrl;
  for (const capability of steps) {
    let result: string | null = null;
    for (let attempt = 1; attempt <= NAIVE.maxAttempts && result === null; attempt++) {
      const created = await gate.call(() => client.create(capability, { image }));
      const businessType = created.businessType ?? CAPABILITIES[capability].businessType;
      for (let first = true; ; first = false) {
        await clock.sleep(first && peer.firstAtHint ? (created.waitTimeMs ?? 0) : peer.everyMs);
        const t = await gate.call(() => client.task(businessType, created.taskId));
        if (t.status === 'SUCCESS' && t.generateUrl) {
          result = t.generateUrl;
          break;
        }
        if (t.status === 'FAIL') break; // create again
        if (t.status === 'ERROR' || t.status === 'OTHER') return false;
      }
    }
    if (result === null) return false;
    image = result;
  }
  const res = await fetchResult(new URL(image));
  return res.status === 200;
}

export async function simulateNaive(w: Workload, opts: { seed?: number; peer?: Peer } = {}): Promise<RunFigures> {
  const peerName = opts.peer ?? 'naive';
  const peer = PEERS[peerName];
  const vc = new VirtualClock(VIRTUAL_START_MS);
  const restore = installClock(vc);
  try {
    const model = new SimModel(simOptionsFor(w, opts.seed ?? 1));
    const transport = inProcessTransport(model);
    const fetchResult = inProcessResultFetch(model);
    let done = 0;
    let notDone = 0;
    const lanes = benchKeys(w).map(async ({ key }, k) => {
      const client = new ApiClient({ baseUrl: 'http://sim.invalid', apiKey: key, transport });
      const gate = new Gate(w.peersPaceKey ? 60_000 / limitsOf(w).callsPerMinute : NAIVE.callGapMs);
      const queue: number[] = [];
      for (let i = k; i < w.photos; i += w.keys) queue.push(i);
      const worker = async () => {
        for (let i = queue.shift(); i !== undefined; i = queue.shift()) {
          if (await processPhoto(client, gate, fetchResult, w.steps, i, peer)) done++;
          else notDone++;
        }
      };
      await Promise.all(Array.from({ length: NAIVE.slots }, worker));
    });

    const wallStart = performance.now();
    const startMs = vc.now();
    let finished = false;
    const all = Promise.all(lanes).finally(() => {
      finished = true;
    });
    all.catch(() => {}); // rethrown by `await all` below
    await vc.run(() => finished, { maxMs: virtualLimitMs(w) });
    await all;
    const wallMs = performance.now() - wallStart;
    return figuresFrom(
      w,
      peerName,
      model.audit(),
      { startMs, endMs: vc.now(), done, notDone, wallMs },
      boundOf(w, model, startMs, vc.now()),
    );
  } finally {
    restore();
  }
}
