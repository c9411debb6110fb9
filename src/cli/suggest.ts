/**
 * "did you mean" for a mistyped option: yargs' recommendCommands() does commands, and its
 * strict mode names an unknown option without a suggestion.
 */

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

/** The closest of `known` to `word`, when close enough to be a typo (a third of its length, at least 1). */
function closest(word: string, known: readonly string[]): string | undefined {
  let best: { name: string; d: number } | undefined;
  for (const name of known) {
    const d = distance(word.toLowerCase(), name.toLowerCase());
    if (!best || d < best.d) best = { name, d };
  }
  const allowed = Math.max(1, Math.floor(word.length / 3));
  return best && best.d <= allowed ? best.name : undefined;
}

/**
 * yargs' one-line usage failure, made into darkroom's: "Unknown argument: jsn" becomes
 * `unknown option --jsn; did you mean --json?`, and recommendCommands' bare "Did you mean
 * status?" names what was typed.
 */
export function usageLine(msg: string, typed: readonly string[], options: readonly string[]): string {
  const cmd = /^Did you mean (\S+)\?$/.exec(msg.trim());
  if (cmd) {
    const word = typed.find((t) => !t.startsWith('-')) ?? '';
    return `unknown command "${word}"; did you mean ${cmd[1]}?`;
  }
  const unknown = /^Unknown arguments?: (.+)$/.exec(msg.trim());
  if (unknown) {
    const all = unknown[1]!.split(', ');
    // yargs names an unknown `--max-photoz` twice, as typed and camel-cased (`maxPhotoz`).
    const kebab = (n: string) => n.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
    const names = all.filter((n) => !(/[A-Z]/.test(n) && all.includes(kebab(n))));
    const parts = names.map((n) => {
      // A bare word is a command or an extra positional; an option was typed with dashes.
      const dashed = typed.some((t) => t === `--${n}` || t.startsWith(`--${n}=`) || t === `-${n}`);
      if (!dashed) return `unexpected argument "${n}"`;
      const flag = n.length === 1 ? `-${n}` : `--${n}`;
      const near = closest(
        n,
        options.filter((o) => o.length > 1 && o !== '$0'),
      );
      return `unknown option ${flag}${near ? `; did you mean --${near}?` : ''}`;
    });
    return parts.join('; ');
  }
  const missing = /^Not enough non-option arguments: got (\d+), need at least (\d+)$/.exec(msg.trim());
  if (missing) {
    const command = typed.find((t) => !t.startsWith('-'));
    return `missing an argument${command ? `: darkroom ${command} needs its jobs file (darkroom ${command} <jobs.yaml>)` : ''}`;
  }
  const noValue = /^Not enough arguments following: (.+)$/.exec(msg.trim());
  if (noValue) return `--${noValue[1]} needs a value`;
  return msg.split('\n')[0]!;
}
