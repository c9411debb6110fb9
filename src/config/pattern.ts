/**
 * The output file-name pattern (`output.pattern`): `{name}` the input's name without its
 * extension, `{step}` the step whose result it is, `{ext}` the extension of the result's
 * real type. It may hold folders (`{step}/{name}.{ext}`), always below output.dir.
 */

export const PLACEHOLDERS = ['name', 'step', 'ext'] as const;
export type Placeholder = (typeof PLACEHOLDERS)[number];

/** Characters refused in a pattern: unusable in file names on some system darkroom's outputs may be copied to. */
// eslint-disable-next-line no-control-regex -- control characters are what file names must not hold
const ILLEGAL = /[<>:"|?*\\\u0000-\u001f]/;

/** What is wrong with a pattern, or null when it is usable. */
export function checkPattern(pattern: string): string | null {
  for (const m of pattern.matchAll(/\{([^{}]*)\}/g)) {
    if (!(PLACEHOLDERS as readonly string[]).includes(m[1]!)) {
      return `unknown placeholder {${m[1]}}; expected {name}, {step} and {ext}, got ${JSON.stringify(pattern)}`;
    }
  }
  const bare = pattern.replace(/\{(name|step|ext)\}/g, '');
  if (/[{}]/.test(bare)) return `unbalanced braces; expected {name}, {step} and {ext}, got ${JSON.stringify(pattern)}`;
  if (!pattern.includes('{name}')) return `must contain {name}, got ${JSON.stringify(pattern)}`;
  if (!pattern.includes('{ext}'))
    return `must contain {ext} (the extension comes from the result's real type), got ${JSON.stringify(pattern)}`;
  if (ILLEGAL.test(bare)) return `must not contain any of < > : " | ? * \\ or control characters, got ${JSON.stringify(pattern)}`;
  if (pattern.startsWith('/')) return `must be relative to output.dir, got ${JSON.stringify(pattern)}`;
  for (const seg of pattern.split('/')) {
    if (seg === '' || seg === '.' || seg === '..')
      return `must not contain empty, "." or ".." folder names, got ${JSON.stringify(pattern)}`;
  }
  return null;
}

/** The pattern with the given placeholders replaced; any not given stay as they are. */
export function fillPattern(pattern: string, values: Partial<Record<Placeholder, string>>): string {
  return pattern.replace(/\{(name|step|ext)\}/g, (whole, key: Placeholder) => values[key] ?? whole);
}
