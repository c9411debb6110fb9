import { describe, expect, it } from 'vitest';
import { csvCell, jsonSafe, shownText, terminalSafe } from '../../src/display.js';

describe('how text from outside is shown', () => {
  it('escapes controls, DEL, C1, bidi controls and invisible spaces in a name; keeps accents, scripts and emoji', () => {
    expect(shownText('evil\x1b[2J\x1b]0;PWN\x07.jpg')).toBe('evil\\x1b[2J\\x1b]0;PWN\\x07.jpg');
    expect(shownText('a\rb\nc\td\x7fe\x9bf')).toBe('a\\rb\\nc\\td\\x7fe\\x9bf');
    expect(shownText('photo\u202egnp.jpg')).toBe('photo\\u202egnp.jpg');
    expect(shownText('pa\u200by\u2066.jpg\ufeff')).toBe('pa\\u200by\\u2066.jpg\\ufeff');
    expect(shownText('café 照片 مرحبا 👨\u200d👩\u200d👧 “q”')).toBe('café 照片 مرحبا 👨\u200d👩\u200d👧 “q”');
  });

  it("keeps the lines and tabs of darkroom's own layout in whole text, and escapes the rest", () => {
    expect(terminalSafe('line 1\n\tline 2 \x1b]52;c;eA==\x07\r')).toBe('line 1\n\tline 2 \\x1b]52;c;eA==\\x07\\r');
  });

  it('leaves JSON exact: the escaped text parses back to the same characters', () => {
    const value = { name: 'a\x7f\x85\u202e\u2028b\x1b' };
    const text = jsonSafe(JSON.stringify(value));
    expect(/[\x7f-\x9f\u202e\u2028\x1b]/.test(text)).toBe(false);
    expect(JSON.parse(text)).toEqual(value);
  });

  it('defuses CSV cells a spreadsheet would run, and only those', () => {
    for (const c of ['=1+1', '+cmd', '-2', '@SUM(1)', '\tx', '\rx']) expect(csvCell(c)).toBe(`'${c}`);
    for (const c of ['photo.jpg', '2026-11-27T10:00:00.000Z', "'quoted", '']) expect(csvCell(c)).toBe(c);
  });
});
