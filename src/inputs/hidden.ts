/**
 * Hidden files: a name on the path under input.dir that starts with a dot (`.thumbnails/`,
 * macOS's `._photo.jpg` and `.Trashes/`, `.Trash-1000/` of a USB stick, a NAS's `.@__thumb/`).
 * They are left out unless input.hidden is true, as glob's `dot: false` did, but counted
 * and mentioned rather than silently ignored.
 *
 * A folder an include pattern names itself (`.picasaoriginals/**\/*.jpg`) is asked for,
 * not hidden: glob matched such a literal dot name even with `dot: false`.
 */
export function hiddenMatcher(include: readonly string[]): (relPath: string) => boolean {
  const named = new Set<string>();
  for (const pattern of include) {
    for (const seg of pattern.split('/')) if (seg.startsWith('.') && !/[*?[\]{}()!+@]/.test(seg)) named.add(seg);
  }
  return (relPath) => relPath.split('/').some((seg) => seg.startsWith('.') && !named.has(seg));
}

/** The operator's line about hidden files left out, or null when there were none. */
export function hiddenLine(count: number): string | null {
  if (count === 0) return null;
  return `${count} hidden file${count === 1 ? '' : 's'} (names starting with a dot) ${count === 1 ? 'was' : 'were'} not included; set input.hidden: true to include ${count === 1 ? 'it' : 'them'}`;
}
