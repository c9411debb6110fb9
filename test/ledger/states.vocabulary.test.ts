import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { Ledger } from '../../src/ledger/index.js';
import {
  assertEntry,
  assertSubmissionTransition,
  createsLeft,
  createsLeftSql,
  inPhase,
  phaseOf,
  STATES,
  TERMINAL,
} from '../../src/ledger/transitions.js';
import { discovered } from '../helpers/discovered.js';
import { InvalidTransitionError } from '../../src/errors.js';

/** The one table of docs/ARCHITECTURE.md § States, and the words read from it. */
describe('the state vocabulary', () => {
  it('gives every state one phase, in the order status --json lists them', () => {
    expect(STATES).toEqual([
      'queued',
      'uploading',
      'uploaded',
      'submitting',
      'active',
      'succeeded',
      'downloading',
      'done',
      'held',
      'failed',
      'skipped',
      'gone',
    ]);
    expect(inPhase('running')).toEqual(['submitting', 'active']);
    expect(inPhase('paid')).toEqual(['succeeded', 'downloading']);
    expect([...TERMINAL]).toEqual(['done', 'held', 'failed', 'skipped', 'gone']);
    // the phases cover the states exactly once
    const phases = ['upload', 'create', 'running', 'paid', 'done', 'held', 'failed', 'skipped', 'gone'] as const;
    expect(phases.flatMap((p) => inPhase(p)).sort()).toEqual([...STATES].sort());
    for (const s of STATES) expect(phases).toContain(phaseOf(s));
  });

  it('counts creates left the same in SQL as in code, for every state, step and step count', () => {
    const db = new Database(':memory:');
    const q = db.prepare(`SELECT ${createsLeftSql()} AS n FROM (SELECT ? AS state, ? AS step_index)`);
    for (const s of STATES) {
      for (let steps = 1; steps <= 3; steps++) {
        for (let step = 0; step < steps; step++) {
          expect((q.get(s, step, { steps }) as { n: number } | undefined)?.n ?? NaN, `${s} step ${step} of ${steps}`).toBe(
            createsLeft(s, step, steps),
          );
        }
      }
    }
    db.close();
  });

  it('a paid photo of a two-step job still needs its second create (the ledger counted none)', () => {
    expect(createsLeft('succeeded', 0, 2)).toBe(1);
    expect(createsLeft('downloading', 1, 2)).toBe(0);
    expect(createsLeft('active', 0, 2)).toBe(1);
    expect(createsLeft('submitting', 0, 2)).toBe(2); // in flight: not known to be made
    expect(createsLeft('held', 0, 2)).toBe(0);
    const l = Ledger.open(':memory:');
    discovered(l, ['a.jpg']);
    expect(l.createsNeeded(2)).toBe(2);
    l.items.move(1, 'queued', 'uploading', { key_fp: 'k_1' });
    l.items.move(1, 'uploading', 'uploaded', { input_url: 'http://x/a.jpg' });
    l.items.move(1, 'uploaded', 'submitting', { key_fp: 'k_1' });
    l.items.move(1, 'submitting', 'active', { task_id: 't1' });
    expect(l.createsNeeded(2)).toBe(1);
    l.items.move(1, 'active', 'succeeded', { result_url: 'http://x/r.jpg' });
    expect(l.createsNeeded(2)).toBe(1);
    l.close();
  });

  it('lets items enter only where a file or a URL line starts', () => {
    expect(() => assertEntry('queued')).not.toThrow();
    expect(() => assertEntry('uploaded')).not.toThrow();
    for (const s of STATES.filter((x) => x !== 'queued' && x !== 'uploaded'))
      expect(() => assertEntry(s), s).toThrow(InvalidTransitionError);
  });

  it('resolves a submission once, from sending', () => {
    expect(() => assertSubmissionTransition(null, 'sending')).not.toThrow();
    for (const to of ['accepted', 'rejected', 'ambiguous'] as const) expect(() => assertSubmissionTransition('sending', to)).not.toThrow();
    expect(() => assertSubmissionTransition(null, 'accepted')).toThrow(InvalidTransitionError);
    expect(() => assertSubmissionTransition('accepted', 'ambiguous')).toThrow(InvalidTransitionError);
    expect(() => assertSubmissionTransition('ambiguous', 'accepted')).toThrow(InvalidTransitionError);
  });
});
