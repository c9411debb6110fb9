import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { installClock, VirtualClock } from '../../src/clock.js';
import type { Config } from '../../src/config/index.js';
import { Ledger, type ItemRow } from '../../src/ledger/index.js';
import { silentLogger } from '../../src/log.js';
import { RunControl } from '../../src/run/control.js';
import { Guards } from '../../src/run/guards.js';
import { discovered } from '../helpers/discovered.js';

// The credit guard's arithmetic on a ledger in memory and a virtual clock: what the balance
// says (usedCredit belongs to the whole account) against what this run's creates cost.

const config = { steps: [{ capability: 'restore' }], credits: {} } as unknown as Config;

describe('Guards: --max-credits', () => {
  let clk: VirtualClock;
  let restore: () => void;
  let ledger: Ledger;
  let control: RunControl;
  beforeEach(() => {
    clk = new VirtualClock();
    restore = installClock(clk);
    ledger = Ledger.open(':memory:');
    discovered(
      ledger,
      Array.from({ length: 10 }, (_, i) => `p${i}.jpg`),
    );
    control = new RunControl(ledger, silentLogger());
  });
  afterEach(() => {
    ledger.close();
    restore();
  });

  const item = (id: number) => ledger.items.get(id)!;
  /** A create sent for a photo (state 'sending': it may be charged). */
  const create = (id: number) => {
    ledger.items.move(id, 'queued', 'uploading', { key_fp: 'k_test' });
    const up = ledger.items.move(id, 'uploading', 'uploaded', { image_url: `https://x/${id}` });
    ledger.submissions.begin(up as ItemRow, 'restore', 'k_test', `dr-${id}`);
  };
  /** Let virtual time pass in 10 s steps, the reader's promises settling after each. */
  const pass = async (ms: number) => {
    for (let t = 0; t < ms; t += 10_000) {
      clk.advanceBy(10_000);
      for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    }
  };

  it('counts credits spent elsewhere on the account, read from the balance, and stops before passing the limit', async () => {
    // Baseline 100; then the account has used 103: at most 1 of it ours, so 2 another client's.
    const readings = [100, 103];
    const reads: number[] = [];
    const guards = new Guards(
      { maxCredits: 4 },
      {
        ledger,
        config,
        control,
        log: silentLogger(),
        readUsedCredit: async () => (reads.push(clk.now()), readings.shift() ?? 103),
      },
    );
    await guards.begin(true);
    expect(reads).toHaveLength(1);
    expect(guards.mayCreate(item(1))).toBe(true);
    create(1);
    expect(guards.creditsSpent()).toBe(1);
    // Near the limit (4 − 1 ≤ 3): the balance is read again within 10 s, not a minute.
    await pass(10_000);
    expect(reads).toHaveLength(2);
    expect(guards.creditsSpent()).toBe(3);
    expect(guards.mayCreate(item(2))).toBe(true);
    create(2);
    // 2 of ours + 2 of the other client's: a fifth credit would pass the limit.
    expect(guards.creditsSpent()).toBe(4);
    expect(guards.mayCreate(item(3))).toBe(false);
    expect(control.noCreates).toBe(true);
    expect(control.halt).toMatchObject({ kind: 'limit', exitCode: 4, immediate: false });
    expect(guards.trip?.guard).toBe('max-credits');
    await guards.end();
  });

  it("without a reading (the call failed) counts this run's creates at the price known, 1 when the spec gives none", async () => {
    const guards = new Guards({ maxCredits: 2 }, { ledger, config, control, log: silentLogger(), readUsedCredit: async () => null });
    await guards.begin(true);
    expect(guards.mayCreate(item(1))).toBe(true);
    create(1);
    expect(guards.mayCreate(item(2))).toBe(true);
    create(2);
    expect(guards.mayCreate(item(3))).toBe(false);
    await guards.end();
  });

  it('reads nothing while nothing is created, and nothing at all with no work', async () => {
    let reads = 0;
    const guards = new Guards(
      { maxCredits: 50 },
      { ledger, config, control, log: silentLogger(), readUsedCredit: async () => (reads++, 0) },
    );
    await guards.begin(true);
    await pass(10 * 60_000);
    expect(reads).toBe(1);
    await guards.end();
    const idle = new Guards({ maxCredits: 50 }, { ledger, config, control, log: silentLogger(), readUsedCredit: async () => (reads++, 0) });
    await idle.begin(false);
    expect(reads).toBe(1);
    await idle.end();
  });
});

describe('Guards: --max-credits on a pipeline buys whole photos', () => {
  // restore 1 + upscale 2: a photo costs 3 credits.
  const pipeline = {
    steps: [{ capability: 'restore' }, { capability: 'upscale' }],
    credits: { restore: 1, upscale: 2 },
  } as unknown as Config;
  let restore: () => void;
  let ledger: Ledger;
  let control: RunControl;
  beforeEach(() => {
    restore = installClock(new VirtualClock());
    ledger = Ledger.open(':memory:');
    discovered(
      ledger,
      Array.from({ length: 6 }, (_, i) => `p${i}.jpg`),
    );
    control = new RunControl(ledger, silentLogger());
  });
  afterEach(() => {
    ledger.close();
    restore();
  });

  const item = (id: number) => ledger.items.get(id)!;
  const guardsOf = (maxCredits: number) =>
    new Guards({ maxCredits }, { ledger, config: pipeline, control, log: silentLogger(), readUsedCredit: async () => null });
  const uploaded = (id: number) => {
    ledger.items.move(id, 'queued', 'uploading', { key_fp: 'k_test' });
    ledger.items.move(id, 'uploading', 'uploaded', { image_url: `https://x/${id}` });
  };
  /** The current step's create sent and its task succeeded; on to the next step (or done after the last). */
  const step = (id: number) => {
    const row = item(id);
    ledger.submissions.begin(row, pipeline.steps[row.step_index]!.capability, 'k_test', `dr-${id}-${row.step_index}`);
    ledger.items.move(id, 'submitting', 'active', { task_id: `t${id}-${row.step_index}` });
    ledger.items.move(id, 'active', 'succeeded');
    if (row.step_index === 0) ledger.items.move(id, 'succeeded', 'uploaded', { step_index: 1, image_url: `https://r/${id}` });
    else {
      ledger.items.move(id, 'succeeded', 'downloading');
      ledger.items.move(id, 'downloading', 'done');
    }
  };

  it('takes a photo only when its every step fits, and keeps the creates of the photos taken', async () => {
    const guards = guardsOf(7);
    await guards.begin(true);
    expect(guards.mayTake(item(1))).toBe(true); // 3 reserved
    expect(guards.mayTake(item(2))).toBe(true); // 6 reserved
    // A third photo's 3 credits would pass 7: no new photo from now on, the two taken go on.
    expect(guards.mayTake(item(3))).toBe(false);
    expect(guards.onlyTaken).toBe(true);
    expect(control.halt).toBeUndefined();
    for (const id of [1, 2]) {
      uploaded(id);
      expect(guards.mayCreate(item(id))).toBe(true);
      step(id);
      expect(guards.mayCreate(item(id))).toBe(true);
      step(id);
    }
    expect(guards.creditsSpent()).toBe(6);
    guards.finish();
    expect(guards.trip?.guard).toBe('max-credits');
    expect(guards.endMessage()).toBe(
      'at a limit you set (--max-credits 7: 6 credit(s) spent, 3 credit(s) a photo); every photo started was finished; run again to continue',
    );
    await guards.end();
  });

  it('passes over a photo waiting for a create that the rest cannot buy, and stops once the photos taken had their last create', async () => {
    // An earlier run left photos 1 and 2 between their steps (2 credits each left) and 3 uploaded (a URL input: 3).
    for (const id of [1, 2]) {
      uploaded(id);
      step(id);
    }
    uploaded(3);
    const guards = guardsOf(4);
    guards.checkAffordable();
    expect(control.halt).toBeUndefined();
    await guards.begin(true);
    expect(guards.mayCreate(item(3))).toBe(true); // 3 of 4 reserved
    expect(guards.mayCreate(item(1))).toBe(false); // 3 + 2 > 4
    expect([...guards.passedOver]).toEqual([1]);
    // Photo 3's restore is sent: 1 spent, its upscale (2) still reserved.
    step(3);
    guards.settle();
    expect(control.halt).toBeUndefined();
    expect(guards.mayCreate(item(3))).toBe(true);
    step(3);
    // Photo 3 had its last create: photo 1 will never be bought in this run, so the run stops.
    guards.settle();
    expect(control.halt).toMatchObject({ kind: 'limit', exitCode: 4 });
    expect(guards.endMessage()).toMatch(/--max-credits 4: 3 credit\(s\) spent.*; 2 photo\(s\) started are not finished yet; run again/);
    await guards.end();
  });

  it('a limit below what any photo left needs starts nothing, and says what a photo costs', () => {
    const guards = guardsOf(2);
    guards.checkAffordable();
    expect(control.halt).toMatchObject({ kind: 'limit', exitCode: 4, immediate: false });
    expect(control.noCreates).toBe(true);
    expect(guards.endMessage()).toBe(
      "at a limit you set (--max-credits 2 is less than one photo's steps cost (3 credit(s): restore 1 + upscale 2); nothing was started); raise it to start",
    );
  });
});
