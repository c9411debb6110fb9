import { describe, expect, it } from 'vitest';
import { parseJsonKeepingBigInts } from '../../src/api/json.js';

describe('parseJsonKeepingBigInts', () => {
  it('keeps integers beyond 2^53 as their exact digits', () => {
    const v = parseJsonKeepingBigInts('{"asyncTaskQueueVO":{"asyncTaskId":1836548719273459713,"rank":1}}') as {
      asyncTaskQueueVO: { asyncTaskId: unknown; rank: unknown };
    };
    expect(v.asyncTaskQueueVO.asyncTaskId).toBe('1836548719273459713');
    expect(v.asyncTaskQueueVO.rank).toBe(1);
    expect(JSON.parse('1836548719273459713')).not.toBe(1836548719273459713n.toString());
  });

  it('leaves strings, safe integers, negatives and floats alone', () => {
    const text = '{"s":"12345678901234567890 and \\"99999999999999999999\\"","n":-3,"f":1.5e300,"i":9007199254740991}';
    expect(parseJsonKeepingBigInts(text)).toEqual(JSON.parse(text));
  });

  it('still rejects malformed JSON', () => {
    expect(() => parseJsonKeepingBigInts('{"code":0,')).toThrow(SyntaxError);
    expect(() => parseJsonKeepingBigInts('<html>')).toThrow(SyntaxError);
  });
});
