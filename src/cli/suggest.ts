/**
 * "did you mean" for a mistyped option: yargs' recommendCommands() does commands, and its
 * strict mode names an unknown option without a suggestion.
 */
import { closestWord } from '../display.js';

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
      const near = closestWord(
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
