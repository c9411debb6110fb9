/**
 * The yardstick: the client most people would write first, run against the same model under
 * the same kind of virtual clock. Per key, three workers (one per task slot) each take a
 * photo and carry it through: upload → create → poll every 3 s → next step → download.
 * Calls of a key leave at least 600 ms apart (100 a minute, the minute limit); nothing
 * knows about the hour window. A 429 is obeyed minimally: sleep Retry-After, send again.
 */
import { performance } from 'node:perf_hooks';
import { ApiClient, CAPABILITIES, isApiError, type Capability } from '../src/api/index.js';
import { clock, installClock, VirtualClock } from '../src/clock.js';
import { inProcessResultFetch, inProcessTransport } from '../src/sim/inprocess.js';
import { SimModel } from '../src/sim/model.js';
import { figuresFrom, type RunFigures } from './figures.js';
import { photoPath, tinyPng } from './photos.js';
import { VIRTUAL_START_MS, virtualLimitMs } from './simulate.js';
import { benchKeys, simOptionsFor, type Workload } from './workloads.js';

export const NAIVE = { pollEveryMs: 3_000, callGapMs: 600, slots: 3, maxAttempts: 3 } as const;

/** One key's calls, spaced NAIVE.callGapMs apart in the order they asked. */
class Gate {
  private nextAt = 0;

  async call<T>(send: () => Promise<T>): Promise<T> {
    for (;;) {
      const now = clock.now();
      const at = Math.max(now, this.nextAt);
      this.nextAt = at + NAIVE.callGapMs;
      if (at > now) await clock.sleep(at - now);
      try {
        return await send();
      } catch (err) {
        if (isApiError(err) && err.kind === 'retry-later') {
          await clock.sleep(err.retryAfterMs ?? NAIVE.pollEveryMs);
          continue;
        }
        throw err;
      }
    }
  }
}

/** One photo, start to end; true when its output was fetched. */
async function processPhoto(client: ApiClient, gate: Gate, fetchResult: ReturnType<typeof inProcessResultFetch>, steps: readonly Capability[], i: number): Promise<boolean> {
  let image = (await gate.call(() => client.upload(tinyPng(i), photoPath(i), 'image/png'))).imageUrl;
  for (const capability of steps) {
    let result: string | null = null;
    for (let attempt = 1; attempt <= NAIVE.maxAttempts && result === null; attempt++) {
      const created = await gate.call(() => client.create(capability, { image }));
      const businessType = created.businessType ?? CAPABILITIES[capability].businessType;
      for (;;) {
        await clock.sleep(NAIVE.pollEveryMs);
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

export async function simulateNaive(w: Workload, opts: { seed?: number } = {}): Promise<RunFigures> {
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
      const gate = new Gate();
      const queue: number[] = [];
      for (let i = k; i < w.photos; i += w.keys) queue.push(i);
      const worker = async () => {
        for (let i = queue.shift(); i !== undefined; i = queue.shift()) {
          if (await processPhoto(client, gate, fetchResult, w.steps, i)) done++;
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
    return figuresFrom(w, 'naive', model.audit(), { startMs, endMs: vc.now(), done, notDone, wallMs });
  } finally {
    restore();
  }
}
