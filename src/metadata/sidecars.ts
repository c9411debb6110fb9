import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { XMLValidator } from 'fast-xml-parser';

/**
 * The archive's own XMP sidecars beside an input: what Lightroom, Bridge and Capture One
 * keep as `scan.xmp` and darktable and digiKam as `scan.tif.xmp` (captions, keywords,
 * people, ratings, rights typed by an archivist), above all for RAW files and for masters
 * that are never rewritten. Both conventions are read, the case of each extension ignored
 * (`scan.XMP`, `scan.TIF.xmp`). How they are merged with the input's embedded metadata is
 * tags.ts copyArgs's (docs/metadata.md § The archive's own XMP sidecars).
 */

/** A sidecar larger than this is not XMP anyone typed: it is not read (nor parsed). */
const SIDECAR_MAX = 16 * 1024 * 1024;

/**
 * The sidecars of the input named `base` among the names of its folder: `<stem>.xmp` first,
 * then `<name>.xmp` (the more particular of the two, read last so that it wins).
 */
export function sidecarNames(base: string, names: readonly string[]): string[] {
  const ext = path.extname(base);
  const stem = ext === '' ? base : base.slice(0, -ext.length);
  const lower = (s: string) => s.toLowerCase();
  const short = names.filter((n) => n.length === stem.length + 4 && n.startsWith(stem) && lower(n.slice(stem.length)) === '.xmp');
  const long =
    ext === ''
      ? []
      : names.filter((n) => n.length === base.length + 4 && n.startsWith(stem) && lower(n.slice(stem.length)) === lower(`${ext}.xmp`));
  return [...short.sort(), ...long.sort()].filter((n) => n !== base);
}

/**
 * The sidecars of `file` that exist as files, in the order they are read. `names` caches each
 * folder's XMP names, the only ones sidecarNames can pick: a roll of a thousand scans is listed
 * once, and each scan's sidecars are looked for among its few XMP files, not its thousand names
 * (`plan` over a million photos in such folders spent a minute comparing names).
 */
export function sidecarsOf(file: string, names: Map<string, readonly string[]> = new Map()): string[] {
  const dir = path.dirname(file);
  let list = names.get(dir);
  if (list === undefined) {
    try {
      list = readdirSync(dir).filter((n) => n.slice(-4).toLowerCase() === '.xmp');
    } catch {
      list = [];
    }
    names.set(dir, list);
  }
  return sidecarNames(path.basename(file), list)
    .map((n) => path.join(dir, n))
    .filter((f) => {
      try {
        return statSync(f).isFile();
      } catch {
        return false;
      }
    });
}

/** Why `file` is not a well-formed XMP sidecar (not XML, no XMP packet, unreadable), or null when it is. */
export function sidecarProblem(file: string): string | null {
  let text: string;
  try {
    if (statSync(file).size > SIDECAR_MAX) return `over ${SIDECAR_MAX / 1024 / 1024} MiB`;
    text = readFileSync(file, 'utf8');
  } catch (err) {
    return `cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)})`;
  }
  const ok = XMLValidator.validate(text);
  if (ok !== true) return `not well-formed XML (line ${ok.err.line}: ${ok.err.msg.replace(/\s+/g, ' ').slice(0, 80)})`;
  if (!/<(x:xmpmeta|rdf:RDF)[\s>]/.test(text)) return 'XML without an XMP packet (no x:xmpmeta or rdf:RDF)';
  return null;
}
