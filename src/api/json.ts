/**
 * JSON.parse, except that integers too large for a double are kept as their digit
 * strings. Image to Image returns `asyncTaskId` as a JSON integer; if the service uses
 * 64-bit ids, JSON.parse would silently round them and every poll would 404.
 * (Node 20 has no JSON.parse source-text access, hence the small scanner.)
 */
export function parseJsonKeepingBigInts(text: string): unknown {
  return JSON.parse(quoteUnsafeIntegers(text));
}

function quoteUnsafeIntegers(text: string): string {
  let out = '';
  let last = 0;
  let i = 0;
  const n = text.length;
  while (i < n) {
    const ch = text.charCodeAt(i);
    if (ch === 0x22 /* " */) {
      i++;
      while (i < n) {
        const c = text.charCodeAt(i);
        if (c === 0x5c /* \ */) i += 2;
        else if (c === 0x22) {
          i++;
          break;
        } else i++;
      }
      continue;
    }
    if (ch === 0x2d /* - */ || (ch >= 0x30 && ch <= 0x39)) {
      const start = i;
      i++;
      while (i < n && /[0-9eE.+-]/.test(text[i]!)) i++;
      const token = text.slice(start, i);
      if (/^-?\d+$/.test(token) && !Number.isSafeInteger(Number(token))) {
        out += text.slice(last, start) + `"${token}"`;
        last = i;
      }
      continue;
    }
    i++;
  }
  return last === 0 ? text : out + text.slice(last);
}
