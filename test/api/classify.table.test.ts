import { describe, expect, it } from 'vitest';
import { classify, ERROR_TABLE } from '../../src/api/classify.js';
import { SPEC_ERRORS } from '../helpers/errorTable.js';

const EXPECTED = SPEC_ERRORS.map((row) => [...row] as [number, number, string, string]);

describe('classify: the spec error table', () => {
  it.each(EXPECTED)('HTTP %i code %i is %s (%s)', (status, code, kind, errCode) => {
    const c = classify(status, code);
    expect(c.kind).toBe(kind);
    expect(c.answer).toBe(errCode);
  });

  it('the exported table holds exactly the spec pairs with the expected kinds', () => {
    const table = ERROR_TABLE.map((e) => [e.httpStatus, e.businessCode, e.kind, e.answer]);
    expect(table).toEqual(expect.arrayContaining(EXPECTED));
    expect(table).toHaveLength(EXPECTED.length);
  });

  it.each(ERROR_TABLE.map((e) => [e.httpStatus, e.businessCode, e] as const))(
    'classify agrees with the table entry for HTTP %i code %i',
    (status, code, entry) => {
      const c = classify(status, code);
      expect(c.kind).toBe(entry.kind);
      expect(c.answer).toBe(entry.answer);
      if (entry.kind !== 'ok') {
        expect(c.reason.length).toBeGreaterThan(10);
        expect(c.action.length).toBeGreaterThan(5);
      }
    },
  );
});

describe('classify: pairs outside the table', () => {
  it.each([
    [302, null, 'stop-config', 'REDIRECT_REFUSED'],
    [307, 0, 'stop-config', 'REDIRECT_REFUSED'],
    [301, -2, 'stop-config', 'REDIRECT_REFUSED'],
    [308, null, 'stop-config', 'REDIRECT_REFUSED'],
    [401, null, 'stop-account', 'INVALID_KEY'],
    [401, -2, 'stop-account', 'INVALID_KEY'],
    [429, null, 'retry-later', 'RATE_LIMITED'],
    [200, null, 'ambiguous', 'MALFORMED_RESPONSE'],
    [200, 12345, 'ambiguous', 'UNEXPECTED_CODE'],
    [200, -1, 'ambiguous', 'UNEXPECTED_CODE'],
    [200, 20601, 'stop-account', 'INSUFFICIENT_CREDITS'],
    [200, -1000, 'retry-later', 'SERVICE_BUSY'],
    [201, 0, 'ok', 'OK'],
    [403, null, 'stop-account', 'FORBIDDEN'],
    [403, 24403, 'stop-account', 'NOT_SUBSCRIBED'],
    [404, null, 'retry-later', 'NOT_THE_API'],
    [408, null, 'retry-later', 'REQUEST_TIMEOUT'],
    [400, null, 'fix-request', 'BAD_REQUEST'],
    [400, 999, 'fix-request', 'BAD_REQUEST'],
    [413, null, 'fix-request', 'BAD_REQUEST'],
    [400, -1000, 'retry-later', 'SERVICE_BUSY'],
    [503, null, 'retry-later', 'SERVICE_UNAVAILABLE'],
    [500, null, 'ambiguous', 'SERVER_ERROR'],
    [500, -1000, 'ambiguous', 'SERVER_ERROR'],
    [502, null, 'ambiguous', 'SERVER_ERROR'],
    [504, null, 'ambiguous', 'SERVER_ERROR'],
    [101, null, 'ambiguous', 'UNEXPECTED_STATUS'],
    [600, 0, 'ambiguous', 'UNEXPECTED_STATUS'],
  ] as const)('HTTP %s code %s is %s (%s)', (status, code, kind, errCode) => {
    const c = classify(status, code);
    expect(c.kind).toBe(kind);
    expect(c.answer).toBe(errCode);
  });
});
