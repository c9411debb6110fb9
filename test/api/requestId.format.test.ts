import { describe, expect, it } from 'vitest';
import { isValidRequestId, newRequestId } from '../../src/api/requestId.js';

describe('request ids', () => {
  it('are valid per the spec and unique', () => {
    const ids = new Set<string>();
    for (let i = 0; i < 1000; i++) {
      const id = newRequestId();
      expect(id).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
      expect(id.startsWith('dr-')).toBe(true);
      ids.add(id);
    }
    expect(ids.size).toBe(1000);
  });

  it('take a prefix, and refuse one that would make them invalid', () => {
    expect(newRequestId('create_7')).toMatch(/^create_7-[0-9a-f]{32}$/);
    expect(() => newRequestId('bad prefix')).toThrow(RangeError);
    expect(() => newRequestId('x'.repeat(40))).toThrow(RangeError);
  });

  it('validation follows the spec rule', () => {
    expect(isValidRequestId('a')).toBe(true);
    expect(isValidRequestId('A-z_09'.padEnd(64, 'x'))).toBe(true);
    expect(isValidRequestId('x'.repeat(65))).toBe(false);
    expect(isValidRequestId('')).toBe(false);
    expect(isValidRequestId('has space')).toBe(false);
    expect(isValidRequestId('dot.ted')).toBe(false);
    expect(isValidRequestId(42)).toBe(false);
  });
});
