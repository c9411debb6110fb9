import { describe, expect, it } from 'vitest';
import { Ledger } from '../../src/ledger/index.js';
import { discovered } from '../helpers/discovered.js';

function uploaded(): Ledger {
  const l = Ledger.open(':memory:');
  discovered(l, ['a.jpg', 'b.jpg']);
  for (const id of [1, 2]) {
    l.items.move(id, 'queued', 'uploading', { key_fp: 'k_1' });
    l.items.move(id, 'uploading', 'uploaded', { input_url: `http://x/${id}.jpg`, image_url: `http://x/${id}.jpg` });
  }
  return l;
}

describe('the create protocol (L1, L2)', () => {
  it('commits the submission as sending, with its X-Request-Id, before anything else', () => {
    const l = uploaded();
    const id = l.submissions.begin(l.items.get(1)!, 'enhance', 'k_1', 'dr-abc');
    expect(l.submissions.get(id)).toMatchObject({ state: 'sending', request_id: 'dr-abc', item_id: 1, key_fp: 'k_1' });
    expect(l.items.get(1)!.state).toBe('submitting');
  });

  it('accepting records the task and makes the item active with its first poll time', () => {
    const l = uploaded();
    const item = l.items.get(1)!;
    const id = l.submissions.begin(item, 'enhance', 'k_1', 'dr-1');
    l.submissions.accept(id, item, {
      taskId: 't1',
      businessType: 'ENHANCE',
      responseRequestId: 'srv-1',
      waitHintMs: 1500,
      pollAtMs: 12345,
    });
    expect(l.submissions.get(id)).toMatchObject({
      state: 'accepted',
      task_id: 't1',
      business_type: 'ENHANCE',
      response_request_id: 'srv-1',
    });
    expect(l.items.get(1)).toMatchObject({ state: 'active', task_id: 't1', business_type: 'ENHANCE', due_ms: 12345, attempt: 1 });
  });

  it('a rejected create goes back to wait for another, an ambiguous one is held', () => {
    const l = uploaded();
    const s1 = l.submissions.begin(l.items.get(1)!, 'enhance', 'k_1', 'dr-1');
    l.submissions.reject(
      s1,
      l.items.get(1)!,
      { httpStatus: 429, code: -1000, responseRequestId: 'r', error: 'busy' },
      'uploaded',
      99,
      'busy',
    );
    expect(l.items.get(1)).toMatchObject({ state: 'uploaded', due_ms: 99 });
    const s2 = l.submissions.begin(l.items.get(2)!, 'enhance', 'k_1', 'dr-2');
    l.submissions.ambiguous(
      s2,
      l.items.get(2)!,
      { httpStatus: null, code: null, responseRequestId: null, error: 'reset' },
      'outcome unknown',
    );
    expect(l.items.get(2)).toMatchObject({ state: 'held', reason: 'outcome unknown' });
    expect(l.submissions.get(s2)!.state).toBe('ambiguous');
    const held = l.status().problems.find((p) => p.state === 'held')!;
    expect(held.sentRequestId).toBe('dr-2');
  });
});

describe('recovery at the start of a run', () => {
  it('moves only stale rows: sending creates become ambiguous and held, uploads and downloads restart', () => {
    const l = Ledger.open(':memory:');
    discovered(
      l,
      ['a', 'b', 'c', 'd', 'e'].map((n) => `${n}.jpg`),
    );
    // a: create in flight when the process died
    l.items.move(1, 'queued', 'uploading', { key_fp: 'k' });
    l.items.move(1, 'uploading', 'uploaded', { input_url: 'u' });
    l.submissions.begin(l.items.get(1)!, 'enhance', 'k', 'dr-stale');
    // b: upload in flight
    l.items.move(2, 'queued', 'uploading', { key_fp: 'k' });
    // c: download in flight
    l.items.move(3, 'queued', 'uploading', { key_fp: 'k' });
    l.items.move(3, 'uploading', 'uploaded', { input_url: 'u' });
    const s3 = l.submissions.begin(l.items.get(3)!, 'enhance', 'k', 'dr-3');
    l.submissions.accept(s3, l.items.get(3)!, {
      taskId: 't3',
      businessType: 'ENHANCE',
      responseRequestId: null,
      waitHintMs: null,
      pollAtMs: 0,
    });
    l.tasks.succeeded(l.items.get(3)!, 'http://r/3.jpg', true);
    l.outputs.start(l.items.get(3)!);
    // d: an accepted, active task (fresh: must not move)
    l.items.move(4, 'queued', 'uploading', { key_fp: 'k' });
    l.items.move(4, 'uploading', 'uploaded', { input_url: 'u' });
    const s4 = l.submissions.begin(l.items.get(4)!, 'enhance', 'k', 'dr-4');
    l.submissions.accept(s4, l.items.get(4)!, {
      taskId: 't4',
      businessType: 'ENHANCE',
      responseRequestId: null,
      waitHintMs: null,
      pollAtMs: 0,
    });
    // e: queued (fresh)

    const r = l.recover();
    expect(r).toEqual({ ambiguous: 1, uploadsRestarted: 1, downloadsRestarted: 1 });
    expect(l.items.get(1)!.state).toBe('held');
    expect(l.items.get(1)!.reason).toContain('dr-stale');
    expect(l.submissions.forItem(1)[0]!.state).toBe('ambiguous');
    expect(l.items.get(2)!.state).toBe('queued');
    expect(l.items.get(3)!.state).toBe('succeeded');
    expect(l.items.get(4)!.state).toBe('active');
    expect(l.items.get(5)!.state).toBe('queued');
    expect(l.recover()).toEqual({ ambiguous: 0, uploadsRestarted: 0, downloadsRestarted: 0 });
  });
});
