/**
 * Text from outside — file names from a donor's disk, captions someone typed, a service's
 * messages — shown to a person without acting on their terminal, page or spreadsheet
 * (docs/names.md). Imports nothing; every part may use it.
 *
 * A terminal takes some characters as commands: ESC starts sequences that clear the screen,
 * set the window title, rewrite what was printed before or put text on the clipboard (OSC
 * 52); BEL rings; CR returns to the start of the line so what follows overwrites it. Unicode
 * has characters that reorder or hide text: a name with U+202E (RIGHT-TO-LEFT OVERRIDE)
 * reads backwards, so "photo‮gpj.exe" looks like "photoexe.jpg". So C0 and C1 controls, DEL,
 * the bidi controls and the invisible spaces are shown as escapes (`\x1b`, `\u202e`), the
 * way git and `ls` quote such names; the rest of Unicode, accents, scripts and emoji, is
 * shown as it is. The zero width joiner (U+200D) stays: emoji sequences are made with it.
 */

/**
 * What is escaped in any text: C0 controls but tab and line feed, DEL, C1 controls, the
 * bidi controls (ALM, LRM, RLM, LRE…RLO, LRI…PDI), and invisible spaces (ZWSP, ZWNJ,
 * WORD JOINER, BOM).
 */
// eslint-disable-next-line no-control-regex
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200b\u200c\u200e\u200f\u202a-\u202e\u2060\u2066-\u2069\ufeff]/g;
/** In a name or a caption shown inside a line, tab and line feed are escaped too: a line is one line. */
// eslint-disable-next-line no-control-regex
const UNSAFE_IN_LINE = /[\u0000-\u001f\u007f-\u009f\u061c\u200b\u200c\u200e\u200f\u202a-\u202e\u2060\u2066-\u2069\ufeff]/g;

const NAMED: Readonly<Record<string, string>> = { '\t': '\\t', '\n': '\\n', '\r': '\\r' };

function escape(c: string): string {
  const named = NAMED[c];
  if (named !== undefined) return named;
  const code = c.codePointAt(0)!;
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
}

/**
 * A name, path, caption or message as shown inside a line of text: every control,
 * line break and tab, bidi control and invisible space escaped (`\x1b`, `\n`, `\u202e`).
 */
export function shownText(s: string): string {
  return s.replace(UNSAFE_IN_LINE, escape);
}

/**
 * Whatever darkroom prints on a terminal, whole: the same escapes, but the lines and tabs
 * of darkroom's own layout kept. The CLI passes every line of text through it, so text
 * from outside that no formatter escaped still cannot act on the terminal.
 */
export function terminalSafe(text: string): string {
  return text.replace(UNSAFE, escape);
}

/**
 * JSON text (`--json`), as exact: JSON.stringify escapes C0 controls already; DEL, the C1
 * controls, the bidi controls and the line and paragraph separators it leaves raw are
 * written as `\u` escapes too, which every JSON reader reads back as the same characters.
 */
export function jsonSafe(json: string): string {
  return json.replace(
    /[\u007f-\u009f\u061c\u200b\u200c\u200e\u200f\u202a-\u202e\u2028\u2029\u2060\u2066-\u2069\ufeff]/g,
    (c) => `\\u${c.codePointAt(0)!.toString(16).padStart(4, '0')}`,
  );
}

/**
 * A CSV cell a spreadsheet will not run (OWASP's CSV injection): a cell that begins with
 * `=`, `+`, `-`, `@`, a tab or a carriage return is a formula to Excel and LibreOffice, so
 * it gets a leading `'`, which they show as text. A program reading the file knows such a
 * cell by its `'` followed by one of those characters, and takes the rest.
 */
export function csvCell(s: string): string {
  return /^[=+\-@\t\r]/.test(s) ? `'${s}` : s;
}

/** Edit distance (insert, delete, substitute, swap two neighbours: "jsno" is one from "json"). */
function distance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
    }
  }
  return d[a.length]![b.length]!;
}

/**
 * The closest of `known` to `word`, when close enough to be a typo (a third of its length, at
 * least 1): the "did you mean" of an unknown option or job-file key.
 */
export function closestWord(word: string, known: readonly string[]): string | undefined {
  let best: { name: string; d: number } | undefined;
  for (const name of known) {
    const d = distance(word.toLowerCase(), name.toLowerCase());
    if (!best || d < best.d) best = { name, d };
  }
  const allowed = Math.max(1, Math.floor(word.length / 3));
  return best && best.d <= allowed ? best.name : undefined;
}
