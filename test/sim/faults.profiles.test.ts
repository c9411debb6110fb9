/**
 * Profiles, config checks, and replay: the same seed and calls give the same faults; `none`
 * injects nothing and answers exactly as a model without a fault layer.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  FAULT_NAMES,
  FAULT_PROFILE_DESCRIPTIONS,
  FAULT_PROFILE_NAMES,
  describeFaults,
  parseFaults,
  resolveFaults,
  type FaultConfig,
  type FaultProfileName,
} from '../../src/sim/faults.js';
import { installClock, VirtualClock } from '../../src/clock.js';
import { getResult, NO_FAULTS, raw } from './faults.helpers.js';
import { multipart, newModel, START, testImage, virtualTime, type Harness } from './helpers.js';

let h: Harness;
beforeEach(() => {
  h = virtualTime();
});
afterEach(() => h.restore());

describe('parseFaults', () => {
  it.each(FAULT_PROFILE_NAMES)('accepts %s', (name) => {
    expect(parseFaults(name)).toBe(name);
    expect(parseFaults(` ${name.toUpperCase()} `)).toBe(name);
  });

  it('refuses an unknown name, listing the choices', () => {
    expect(() => parseFaults('evil')).toThrow('unknown fault profile "evil"; choose one of: none, flaky, hostile');
  });

  it('has a one-line description of each profile', () => {
    for (const name of FAULT_PROFILE_NAMES) {
      expect(FAULT_PROFILE_DESCRIPTIONS[name]).not.toContain('\n');
      expect(describeFaults(name)).toBe(`faults ${name}: ${FAULT_PROFILE_DESCRIPTIONS[name]}`);
    }
  });
});

describe('resolveFaults', () => {
  it('turns everything off for none and for no config', () => {
    for (const spec of [undefined, 'none' as const, {}]) {
      const r = resolveFaults(spec);
      for (const name of FAULT_NAMES) expect(r[name].probability, name).toBe(0);
      expect(r.expiredResultUrl.afterMs).toBeUndefined();
    }
  });

  it('keeps flaky occasional and hostile frequent', () => {
    const flaky = resolveFaults('flaky');
    const hostile = resolveFaults('hostile');
    for (const name of FAULT_NAMES) {
      expect(flaky[name].probability, name).toBeGreaterThan(0);
      expect(flaky[name].probability, name).toBeLessThanOrEqual(0.03);
      expect(hostile[name].probability, name).toBeGreaterThanOrEqual(flaky[name].probability);
      expect(hostile[name].probability, name).toBeLessThanOrEqual(0.15);
    }
    expect(hostile.expiredResultUrl.afterMs).toBe(60_000);
  });

  it('starts an explicit config from a base profile, replacing whole entries', () => {
    const r = resolveFaults({ base: 'hostile', notSubscribed200: { probability: 0 }, slowAnswer: { probability: 1, delayMs: 1_000 } });
    expect(r.profile).toBe('custom');
    expect(r.notSubscribed200.probability).toBe(0);
    expect(r.slowAnswer).toEqual({ probability: 1, delayMs: 1_000, createsOnly: false });
    expect(r.droppedCreate.probability).toBe(resolveFaults('hostile').droppedCreate.probability);
  });

  it.each<[string, FaultConfig]>([
    ['probability', { droppedCreate: { probability: 1.5 } }],
    ['probability', { vanishedTask: { probability: -0.1 } }],
    ['minMs <= maxMs', { burst503: { probability: 0.1, minMs: 10, maxMs: 5 } }],
    ['scope', { spurious429: { probability: 0.1, scopes: ['api_key_day' as never] } }],
    ['403, 404, 410', { expiredResultUrl: { probability: 0.1, statuses: [500 as never] } }],
    ['afterMs', { expiredResultUrl: { afterMs: 0 } }],
  ])('refuses a bad config (%s)', (message, config) => {
    expect(() => resolveFaults(config)).toThrow(message);
  });

  it('refuses an unknown profile name in SimOptions', () => {
    expect(() => newModel({ faults: 'nasty' as FaultProfileName })).toThrow('unknown fault profile');
  });
});

/** Every fault likely at once, so a short script meets all of them. */
const DENSE: FaultConfig = {
  burst503: { probability: 0.03, minMs: 3_000, maxMs: 8_000 },
  spurious429: { probability: 0.1 },
  droppedCreate: { probability: 0.15 },
  slowAnswer: { probability: 0.1 },
  malformedJson: { probability: 0.1 },
  notSubscribed200: { probability: 0.1 },
  expiredResultUrl: { probability: 0.3, afterMs: 30_000 },
  truncatedDownload: { probability: 0.3 },
  vanishedTask: { probability: 0.1 },
  forgottenUpload: { probability: 0.1 },
};

/**
 * A scripted client: upload once, then create, poll and download in turn, one call every
 * 2 s, tolerating whatever it gets. Returns one line per answer.
 */
async function script(
  faults: FaultProfileName | FaultConfig | undefined,
  seed: number,
): Promise<{ trace: string[]; audit: ReturnType<ReturnType<typeof newModel>['audit']> }> {
  // Its own clock from START, so two scripts in one test start from the same moment.
  const vc = new VirtualClock(START);
  const restore = installClock(vc);
  try {
    return await scriptOn(vc, faults, seed);
  } finally {
    restore();
  }
}

async function scriptOn(
  vc: VirtualClock,
  faults: FaultProfileName | FaultConfig | undefined,
  seed: number,
): Promise<{ trace: string[]; audit: ReturnType<ReturnType<typeof newModel>['audit']> }> {
  const model = newModel({
    seed,
    latency: { medianMs: 6_000, sigma: 0.5 },
    processing: 'passthrough',
    ...(faults === undefined ? {} : { faults }),
  });
  const image = await testImage(24, 16);
  const trace: string[] = [];
  let imageUrl: string | undefined;
  const open: string[] = [];
  const urls: string[] = [];
  const json = (b: Buffer): any => {
    try {
      return JSON.parse(b.toString('utf8'));
    } catch {
      return undefined;
    }
  };
  for (let i = 0; i < 240; i++) {
    vc.advanceTo(START + i * 2_000);
    if (!imageUrl) {
      const { body, contentType } = multipart('image', image);
      const res = await raw(model, 'POST', '/api/v1/image/upload', { body, headers: { 'content-type': contentType } });
      trace.push(`upload ${res.status} ${res.body.length} ${res.delayMs ?? ''}`);
      imageUrl = json(res.body)?.data?.imageUrl;
      continue;
    }
    const step = i % 3;
    if (step === 0) {
      const res = await raw(model, 'POST', '/api/v1/restore/generate', { json: { image: imageUrl } });
      trace.push(`create ${res.status} ${res.drop ?? ''} ${res.delayMs ?? ''} ${res.body.toString('utf8')}`);
      // -2: the service forgot the upload; a fresh one works (forgottenUpload).
      if (res.status === 400 && json(res.body)?.code === -2) imageUrl = undefined;
      const id = json(res.body)?.data?.taskId;
      if (!res.drop && id) open.push(id);
    } else if (step === 1 && open.length > 0) {
      const id = open[0]!;
      const res = await raw(model, 'GET', `/api/v1/tasks/RESTORE/${id}`);
      trace.push(`poll ${res.status} ${res.delayMs ?? ''} ${res.body.toString('utf8')}`);
      const data = json(res.body)?.data;
      if (res.status === 404 || (data && data.status !== 'REQUESTED' && data.status !== 'PENDING')) open.shift();
      if (data?.generateUrl) urls.push(data.generateUrl);
    } else if (step === 2 && urls.length > 0) {
      const url = urls[0]!;
      const res = await getResult(model, url);
      trace.push(`get ${url} ${res.status} ${res.body.length} ${res.headers['content-length'] ?? ''} ${res.truncated ?? ''}`);
      if (res.status === 200 && !res.truncated) urls.shift();
      if (res.status !== 200) urls.shift();
    }
  }
  return { trace, audit: model.audit() };
}

describe('replay', () => {
  it('gives the same fault sequence for the same seed', async () => {
    const a = await script(DENSE, 42);
    const b = await script(DENSE, 42);
    expect(b.trace).toEqual(a.trace);
    expect(b.audit).toEqual(a.audit);
    // The script really met the faults it replays.
    for (const name of FAULT_NAMES) expect(a.audit.faults[name], name).toBeGreaterThan(0);
  });

  it('gives another sequence for another seed', async () => {
    const a = await script(DENSE, 42);
    const c = await script(DENSE, 43);
    expect(c.trace).not.toEqual(a.trace);
  });
});

describe('the none profile', () => {
  it('injects nothing and answers byte for byte as a model without faults', async () => {
    const plain = await script(undefined, 7);
    const none = await script('none', 7);
    expect(none.trace).toEqual(plain.trace);
    expect(none.audit).toEqual(plain.audit);
    expect(none.audit.faults).toEqual(NO_FAULTS);
    expect(none.audit.faultedCreates).toEqual([]);
    expect(none.audit.bursts503).toEqual([]);
    expect(none.trace.some((l) => l.includes(' true'))).toBe(false); // no drop, no truncation
    expect(none.trace.filter((l) => l.startsWith('get')).length).toBeGreaterThan(10);
  });
});

describe('profile rates', () => {
  it.each([
    ['flaky', 0.005, 0.04],
    ['hostile', 0.04, 0.13],
  ] as const)('%s injects spurious 429s at its rate', async (profile, low, high) => {
    const model = newModel({ limits: { callsPerMinute: 10_000, callsPerHour: 1_000_000 }, faults: profile });
    let injected = 0;
    let answered = 0;
    for (let i = 0; i < 4_000; i++) {
      h.clock.advanceTo(START + i * 500);
      const res = await raw(model, 'GET', '/api/v1/credits');
      if (res.status === 503) continue;
      answered++;
      if (res.status === 429) injected++;
    }
    const rate = injected / answered;
    expect(rate).toBeGreaterThan(low);
    expect(rate).toBeLessThan(high);
    const audit = model.audit();
    expect(audit.faults.spurious429).toBe(injected);
    expect(audit.keys[Object.keys(audit.keys)[0]!]!.rejected429).toBe(0);
    // 2000 s of calls: hostile's bursts come every few minutes, flaky's rarely.
    if (profile === 'hostile') expect(audit.bursts503.length).toBeGreaterThanOrEqual(3);
  });
});
