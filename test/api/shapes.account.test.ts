import { describe, expect, it } from 'vitest';
import { parseCredits, parseEnvelope, parseUpload, parseUsage } from '../../src/api/shapes.js';
import { ShapeError } from '../../src/errors.js';

describe('account and upload shapes', () => {
  it('reads credits', () => {
    expect(parseCredits({ totalCredit: 100, usedCredit: 3, remainingCredit: 97, extra: 1 })).toEqual({
      totalCredit: 100,
      usedCredit: 3,
      remainingCredit: 97,
    });
    expect(() => parseCredits({ totalCredit: 100 })).toThrow(ShapeError);
  });

  it('reads usage', () => {
    const u = parseUsage({
      apiKey: 'sk…9f',
      userId: 12,
      minuteRemaining: 99,
      hourRemaining: 999,
      globalMinuteRemaining: 9999,
      globalHourRemaining: 49999,
    });
    expect(u).toEqual({
      apiKey: 'sk…9f',
      userId: '12',
      minuteRemaining: 99,
      hourRemaining: 999,
      globalMinuteRemaining: 9999,
      globalHourRemaining: 49999,
    });
    expect(() => parseUsage({ apiKey: 'x', userId: 'u' })).toThrow(ShapeError);
  });

  it('reads an upload', () => {
    expect(parseUpload({ imageUrl: 'https://img.example/a.jpg' })).toEqual({ imageUrl: 'https://img.example/a.jpg' });
    expect(() => parseUpload({ imageUrl: '' })).toThrow(ShapeError);
  });

  it('reads the envelope and the error body', () => {
    expect(parseEnvelope({ code: 0, message: 'ok', data: { a: 1 }, requestId: 'r' })).toEqual({
      code: 0,
      message: 'ok',
      data: { a: 1 },
      requestId: 'r',
    });
    expect(parseEnvelope({ code: 24403, message: 'not subscribed' })).toEqual({
      code: 24403,
      message: 'not subscribed',
      data: undefined,
      requestId: null,
    });
    expect(parseEnvelope({ code: '-60404', message: 'gone', requestId: 'r2' })?.code).toBe(-60404);
  });

  it.each([[undefined], [null], ['html'], [[]], [{}], [{ code: 'abc' }], [{ code: 1.5 }]])('%j is not an envelope', (body) => {
    expect(parseEnvelope(body)).toBeNull();
  });
});
