import { createHash } from 'node:crypto';
import { DIGITAL_SOURCE_TYPE } from './tags.js';

/**
 * What every output with metadata says of itself, in XMP (`basic` and `all` alike, and every
 * XMP sidecar): that a trained model altered an original (IPTC's Digital Source Type), which
 * service did it (`Iptc4xmpExt:AISystemUsed`), which original (`xmpMM:DerivedFrom`: its path
 * and its SHA-256), its own identity (`xmpMM:DocumentID`, `InstanceID`) and one
 * `xmpMM:History` event per step, after whatever history the original had.
 */

/** One step of the photo's pipeline, as its History event tells it. */
export interface HistoryStep {
  /** stEvt:action: what the step did to the picture, in XMP's words ("edited", "resized"). */
  readonly action: string;
  /** When the step's task was seen to end (ms). */
  readonly whenMs: number;
  /** stEvt:parameters: the capability, its options and the task's id. */
  readonly parameters: string;
}

export interface Provenance {
  /** Iptc4xmpExt:AISystemUsed: service.name, or the service's host. */
  readonly aiSystem: string;
  /** stEvt:softwareAgent: "darkroom <version>". */
  readonly agent: string;
  /** The original: its path under input.dir (or its URL), and the SHA-256 of its bytes (null for a URL). */
  readonly original: { readonly path: string; readonly sha256: string | null };
  /** The steps that made this file, in order. */
  readonly steps: readonly HistoryStep[];
  /**
   * What makes this document one of a kind, for its IDs: the same output written again (a
   * rerun after a crash) gets the same IDs; another name, step list or task gets others.
   */
  readonly identity: string;
}

/** The original's own identity and history, as its XMP states them (null, empty where it says nothing). */
export interface SourceIds {
  readonly documentId: string | null;
  readonly instanceId: string | null;
  readonly originalDocumentId: string | null;
  /** Its `xmpMM:History` events as ExifTool reads them (`-struct`: `{ Action, When, SoftwareAgent… }`), kept before ours at `all`. */
  readonly history: readonly Readonly<Record<string, unknown>>[];
}

export const NO_SOURCE_IDS: SourceIds = { documentId: null, instanceId: null, originalDocumentId: null, history: [] };

/** The IDs of a derived document, from its identity: `xmp.did:` and `xmp.iid:` and 32 hex digits, as Adobe's tools write them. */
export function documentIds(identity: string): { documentId: string; instanceId: string } {
  const h = (what: string) => createHash('sha256').update(`${what}\0${identity}`).digest('hex').slice(0, 32);
  return { documentId: `xmp.did:${h('document')}`, instanceId: `xmp.iid:${h('instance')}` };
}

/** The original's bytes as an ID: `urn:sha256:<hex>`. */
function contentUrn(sha256: string): string {
  return `urn:sha256:${sha256}`;
}

/**
 * The ExifTool arguments that write the disclosure and the provenance. Structure fields go
 * in ExifTool's structure syntax, each value escaped (structValue).
 */
export function provenanceArgs(p: Provenance, ids: SourceIds): string[] {
  const { documentId, instanceId } = documentIds(p.identity);
  const urn = p.original.sha256 === null ? null : contentUrn(p.original.sha256);
  const derived: [string, string | null][] = [
    ['documentID', ids.documentId ?? urn],
    ['instanceID', urn ?? ids.instanceId],
    ['filePath', p.original.path],
  ];
  const original = ids.originalDocumentId ?? ids.documentId ?? urn;
  // The whole list in one assignment: it replaces whatever History the service's bytes
  // carried (one that passes metadata through would otherwise list the original's twice).
  const events = [
    ...ids.history.map((h) =>
      struct(Object.entries(h).map(([k, v]) => [`${k[0]!.toLowerCase()}${k.slice(1)}`, typeof v === 'object' ? null : String(v)] as const)),
    ),
    ...p.steps.map((s) =>
      struct([
        ['action', s.action],
        ['when', xmpDate(s.whenMs)],
        ['softwareAgent', p.agent],
        ['parameters', s.parameters],
        ['changed', '/'],
      ]),
    ),
  ];
  const args = [
    `-XMP-iptcExt:DigitalSourceType=${DIGITAL_SOURCE_TYPE}`,
    `-XMP-iptcExt:AISystemUsed=${oneLine(p.aiSystem)}`,
    `-XMP-xmpMM:DocumentID=${documentId}`,
    `-XMP-xmpMM:InstanceID=${instanceId}`,
    `-XMP-xmpMM:DerivedFrom=${struct(derived)}`,
  ];
  if (original !== null) args.push(`-XMP-xmpMM:OriginalDocumentID=${oneLine(original)}`);
  args.push(`-XMP-xmpMM:History=[${events.join(',')}]`);
  return args;
}

/** `{field=value,…}` with every value escaped; fields without a value are left out. */
function struct(fields: readonly (readonly [string, string | null])[]): string {
  return `{${fields
    .filter((f): f is [string, string] => f[1] !== null)
    .map(([k, v]) => `${k}=${structValue(v)}`)
    .join(',')}}`;
}

/**
 * A value inside ExifTool's structure syntax: `,` `}` `]` and `|` are escaped by a `|`, and
 * so are a leading `{` or `[` and leading or trailing white space, which would otherwise be
 * read as syntax or dropped (https://exiftool.org/struct.html).
 */
export function structValue(value: string): string {
  let v = oneLine(value).replace(/[,}\]|]/g, (c) => `|${c}`);
  if (/^[{[\s]/.test(v)) v = `|${v}`;
  if (/\s$/.test(v)) v = `${v.slice(0, -1)}|${v.slice(-1)}`;
  return v;
}

/**
 * ExifTool takes its arguments one a line: a line break inside a value (a file may be named
 * with one) would end it. Control characters become U+FFFD, which XMP can hold.
 */
export function oneLine(value: string): string {
  // eslint-disable-next-line no-control-regex
  return value.replace(/[\u0000-\u001f\u007f]/g, '\ufffd');
}

/** An XMP date: `YYYY:MM:DD HH:MM:SS.sssZ`, which ExifTool writes as ISO 8601. */
function xmpDate(ms: number): string {
  const iso = new Date(ms).toISOString();
  return `${iso.slice(0, 10).replace(/-/g, ':')} ${iso.slice(11, 23)}Z`;
}
