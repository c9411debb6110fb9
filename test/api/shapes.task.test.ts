import { describe, expect, it } from 'vitest';
import { isTerminalStatus, parseTaskInfo, TASK_STATUSES } from '../../src/api/shapes.js';
import { ShapeError } from '../../src/errors.js';

describe('parseTaskInfo', () => {
  it('reads the specified shape', () => {
    const t = parseTaskInfo({ taskId: 't1', status: 'SUCCESS', creation: 1767225600000, generateUrl: 'https://cdn.example/r.png' }, 't1');
    expect(t).toEqual({
      taskId: 't1',
      status: 'SUCCESS',
      rawStatus: 'SUCCESS',
      creationMs: 1767225600000,
      generateUrl: 'https://cdn.example/r.png',
    });
  });

  it('reads generateImage as an alias of generateUrl, generateUrl winning', () => {
    expect(parseTaskInfo({ taskId: 't', status: 'SUCCESS', generateImage: 'https://a/x.png' }, 't').generateUrl).toBe('https://a/x.png');
    expect(
      parseTaskInfo({ taskId: 't', status: 'SUCCESS', generateUrl: 'https://a/u.png', generateImage: 'https://a/i.png' }, 't').generateUrl,
    ).toBe('https://a/u.png');
  });

  it.each(TASK_STATUSES)('known status %s is kept', (s) => {
    expect(parseTaskInfo({ taskId: 't', status: s }, 't').status).toBe(s);
  });

  it('an unknown status maps to OTHER (terminal), keeping the raw string', () => {
    const t = parseTaskInfo({ taskId: 't', status: 'DISCARDED' }, 't');
    expect(t.status).toBe('OTHER');
    expect(t.rawStatus).toBe('DISCARDED');
    expect(isTerminalStatus(t.status)).toBe(true);
  });

  it('terminal states are SUCCESS, FAIL, ERROR, OTHER', () => {
    expect(TASK_STATUSES.filter(isTerminalStatus)).toEqual(['SUCCESS', 'FAIL', 'ERROR', 'OTHER']);
  });

  it('falls back to the polled taskId, and nulls for missing fields', () => {
    expect(parseTaskInfo({ status: 'PENDING' }, 'asked')).toEqual({
      taskId: 'asked',
      status: 'PENDING',
      rawStatus: 'PENDING',
      creationMs: null,
      generateUrl: null,
    });
  });

  it('a 10-digit creation is seconds', () => {
    expect(parseTaskInfo({ taskId: 't', status: 'PENDING', creation: 1767225600 }, 't').creationMs).toBe(1767225600000);
  });

  it.each([null, {}, { status: 3 }, { status: '' }])('a missing status in %j is a ShapeError', (data) => {
    expect(() => parseTaskInfo(data, 't')).toThrow(ShapeError);
  });
});
