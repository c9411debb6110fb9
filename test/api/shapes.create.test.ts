import { describe, expect, it } from 'vitest';
import { parseCreateResult } from '../../src/api/shapes.js';
import { ShapeError } from '../../src/errors.js';

describe('parseCreateResult', () => {
  it('reads the Photo Enhance shape', () => {
    const r = parseCreateResult({
      parentTaskId: 'p-1',
      tasks: [{ taskId: 't-1', asyncTaskQueueVO: { rank: 2, waitTime: 4500 } }],
      queueStatus: 'PENDING',
    });
    expect(r).toEqual({ taskId: 't-1', businessType: null, waitTimeMs: 4500, parentTaskId: 'p-1', rank: 2 });
  });

  it('takes the first tasks[] entry that has a taskId', () => {
    const r = parseCreateResult({ parentTaskId: 'p', tasks: [{}, { taskId: 't-2' }], queueStatus: 'PENDING' });
    expect(r.taskId).toBe('t-2');
    expect(r.waitTimeMs).toBeNull();
    expect(r.rank).toBeNull();
  });

  it('tasks[] without any taskId is malformed (the task may exist: the caller holds it)', () => {
    expect(() => parseCreateResult({ parentTaskId: 'p', tasks: [{ asyncTaskQueueVO: { rank: 1, waitTime: 1 } }] })).toThrow(ShapeError);
    expect(() => parseCreateResult({ parentTaskId: 'p', tasks: [] })).toThrow(/no taskId/);
  });

  it('reads the Image to Image shape, integer asyncTaskId as a string', () => {
    const r = parseCreateResult({ asyncTaskQueueVO: { rank: 0, waitTime: 12000, asyncTaskId: 987654321 } });
    expect(r).toEqual({ taskId: '987654321', businessType: null, waitTimeMs: 12000, parentTaskId: null, rank: 0 });
  });

  it('reads the flat shape', () => {
    const r = parseCreateResult({ taskId: 'abc', businessType: 'RESTORE', status: 'PENDING' });
    expect(r).toEqual({ taskId: 'abc', businessType: 'RESTORE', waitTimeMs: null, parentTaskId: null, rank: null });
  });

  it('reads a mix: flat fields with a queue object, extra fields ignored', () => {
    const r = parseCreateResult({
      taskId: 'abc',
      businessType: 'UPSCALE',
      status: 'PENDING',
      asyncTaskQueueVO: { rank: 5, waitTime: 3000, asyncTaskId: 77 },
      somethingNew: { nested: true },
    });
    expect(r).toEqual({ taskId: 'abc', businessType: 'UPSCALE', waitTimeMs: 3000, parentTaskId: null, rank: 5 });
  });

  it('reads Enhance tasks[] together with the flat fields, tasks[] first', () => {
    const r = parseCreateResult({
      parentTaskId: 'p-9',
      tasks: [{ taskId: 'child-1', asyncTaskQueueVO: { rank: 1, waitTime: 2000 } }],
      queueStatus: 'PENDING',
      taskId: 'flat-1',
      businessType: 'ENHANCE',
      status: 'PENDING',
    });
    expect(r).toEqual({ taskId: 'child-1', businessType: 'ENHANCE', waitTimeMs: 2000, parentTaskId: 'p-9', rank: 1 });
  });

  it('a garbled hint does not spoil a readable taskId', () => {
    const r = parseCreateResult({ taskId: 't', asyncTaskQueueVO: { rank: 'first', waitTime: -4 } });
    expect(r.taskId).toBe('t');
    expect(r.rank).toBeNull();
    expect(r.waitTimeMs).toBeNull();
  });

  it.each([[null], ['str'], [42], [[]], [{}], [{ taskId: '' }], [{ asyncTaskQueueVO: { rank: 1, waitTime: 1 } }]])(
    'no id in %j is a ShapeError',
    (data) => {
      expect(() => parseCreateResult(data)).toThrow(ShapeError);
    },
  );
});
