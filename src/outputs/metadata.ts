import { statSync } from 'node:fs';
import path from 'node:path';
import { metadataNoteText, type FileMetadata, type InputRow, type ItemRow, type Ledger } from '../ledger/index.js';
import { type CarryResult, type MetadataSource, type MetadataWriter } from '../metadata/writer.js';
import { NotSpliceable, type HeadStandIn } from '../metadata/standIn.js';
import type { Provenance } from '../metadata/provenance.js';
import type { Logger } from '../log.js';
import type { MetadataLevel, OutputKind } from '../metadata/tags.js';
import { withMode } from '../config/steps.js';
import { CAPABILITIES, isCapability } from '../spec/capabilities.js';
import type { Finalized } from './atomic.js';
import { writeLayout } from './layout.js';
import type { NamingOptions, OutputTarget } from './naming.js';
import type { Splice } from './splice.js';
import { nodeOutputFs, type OutputFs } from './outputfs.js';
import { MetadataWriteError, OutputWriteError } from '../errors.js';

/**
 * The input's metadata on its outputs (output.metadata), and what each output says of
 * itself: the glue between the ledger's facts (which original, which steps, which tasks)
 * and ExifTool (metadata/writer.ts). Runs in the download stage, beside the lanes: it never
 * holds a task slot or spends a call.
 */

export interface MetadataOptions {
  /** output.metadata. */
  readonly level: MetadataLevel;
  /** output.sidecar includes xmp: <output>.xmp beside each output. */
  readonly xmpSidecar: boolean;
  /** ExifTool, started; null when nothing needs it (metadata none, no XMP sidecar). */
  readonly writer: MetadataWriter | null;
  /** Iptc4xmpExt:AISystemUsed: service.name, else the base URL's host. */
  readonly aiSystem: string;
  /** stEvt:softwareAgent: "darkroom <version>". */
  readonly agent: string;
}

/** The log's line for an output with a note (ledger's metadataNoteText). */
export function metadataNoteLine(m: FileMetadata): string {
  return metadataNoteText(m.level, m.note ?? '');
}

/** What an output carries when no metadata is asked for. */
export const NO_METADATA: FileMetadata = { level: 'none', note: null, dateTaken: null, caption: null };

/** The size of the file the input's metadata would be read from (0 when none). */
function sourceSize(ledger: Ledger, item: ItemRow, target: OutputTarget): number {
  const s = metadataSource(ledger, item, target.input);
  try {
    return 'file' in s ? statSync(s.file).size : 0;
  } catch {
    return 0;
  }
}

/** The output's kind for ExifTool, from its extension. */
export function kindOf(ext: string): OutputKind {
  return ext === 'png' ? 'png' : ext === 'webp' ? 'webp' : 'jpeg';
}

/**
 * The provenance of one file: the original it came from (under the name `input`), the steps
 * up to `lastStep` with their tasks, and an identity that the same file written again keeps.
 */
export function provenanceOf(
  ledger: Ledger,
  item: ItemRow,
  input: InputRow | null,
  naming: NamingOptions,
  lastStep: number,
  meta: MetadataOptions,
  outPath: string,
): Provenance {
  const attempts = ledger.outputFiles.attemptsOf(item.id);
  const steps = [];
  const tasks: string[] = [];
  const redoMode = ledger.reviews.redoModeOf(item.id);
  for (let i = 0; i <= lastStep; i++) {
    const used = attempts.filter((a) => a.step_index === i && a.status === 'SUCCESS').at(-1);
    const jobStep = naming.steps[i];
    const cfg = jobStep && withMode(jobStep, redoMode);
    const capability = cfg?.capability ?? used?.capability ?? 'unknown';
    const params = [`capability=${capability}`];
    for (const k of ['mode', 'resolution', 'style'] as const) if (cfg?.[k] !== undefined) params.push(`${k}=${cfg[k]}`);
    if (used) {
      params.push(`task=${used.task_id}`);
      tasks.push(used.task_id);
    }
    steps.push({
      action: isCapability(capability) ? CAPABILITIES[capability].historyAction : 'edited',
      whenMs: used?.ended_ms ?? used?.started_ms ?? item.updated_ms,
      parameters: params.join('; '),
    });
  }
  const url = input?.kind === 'url' || (input === null && item.content_hash?.startsWith('url:') === true);
  const sha = item.content_hash !== null && /^[0-9a-f]{64}$/.test(item.content_hash) ? item.content_hash : null;
  return {
    aiSystem: meta.aiSystem,
    agent: meta.agent,
    original: { path: url ? (input?.src ?? item.src_path) : (input?.name ?? item.rel_path), sha256: url ? null : sha },
    steps,
    identity: [item.content_hash ?? item.rel_path, item.steps_sig ?? '', tasks.join(','), path.basename(outPath), input?.id ?? ''].join(
      '|',
    ),
  };
}

/**
 * Where the input's metadata is read from: the name's own file if it is still the file
 * discovery found (same size and modification time), else another current name of the same
 * photo that is (a file renamed during the run, a duplicate); else why there is nothing.
 */
export function metadataSource(ledger: Ledger, item: ItemRow, input: InputRow | null): MetadataSource {
  if (input?.kind === 'url' || (input === null && item.content_hash?.startsWith('url:'))) {
    return { none: 'a URL input: darkroom never holds its file, so it has no metadata to carry' };
  }
  const others = ledger.inputs.inputsOf(item.id).filter((r) => r.kind === 'file' && r.id !== input?.id);
  const candidates = [input ?? { src: item.src_path, name: item.rel_path, size_bytes: item.size_bytes, mtime_ms: null }, ...others];
  let why: string | null = null;
  for (const c of candidates) {
    let st;
    try {
      st = statSync(c.src);
    } catch (err) {
      why ??= `the input ${c.name} cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)})`;
      continue;
    }
    if ((c.size_bytes !== null && st.size !== c.size_bytes) || (c.mtime_ms !== null && Math.abs(st.mtimeMs - c.mtime_ms) >= 1)) {
      why ??= 'the input changed after it was found; the next run processes its new version';
      continue;
    }
    return { file: c.src };
  }
  return { none: why ?? 'the input cannot be read' };
}

/** An atomic write's `finalize` (outputs/atomic.ts). */
type Finalize = (temp: string, dir: string) => Promise<string | Finalized>;

/**
 * The `finalize` of an output's write (outputs/atomic.ts): the service's bytes in `temp`
 * get the input's metadata in a new temp file beside it, which is what is renamed into
 * place. `record` learns what the file carries. When ExifTool cannot write the file at all,
 * the service's bytes go in as they are, marked with the reason: the photo is paid for, so
 * its output is never held back for its metadata. ExifTool does not say why a write failed;
 * when the folder has no room for another copy, that is the reason, and the write fails as
 * a full disk does (the photo is retried once there is room).
 */
export function carryStep(
  meta: MetadataOptions,
  ledger: Ledger,
  item: ItemRow,
  target: OutputTarget,
  ext: string,
  lastStep: number,
  naming: NamingOptions,
  record: (m: FileMetadata) => void,
  fs: OutputFs = nodeOutputFs,
  log?: Logger,
): Finalize | undefined {
  const writer = meta.writer;
  if (meta.level === 'none' || writer === null) return undefined;
  const level = meta.level;
  return async (temp, dir) => {
    const provenance = provenanceOf(ledger, item, target.input, naming, lastStep, meta, target.path);
    try {
      const source = metadataSource(ledger, item, target.input);
      const r = await writer.carry({ raw: temp, kind: kindOf(ext), level, source, provenance });
      try {
        const made = r.layout === null ? temp : await writeLayout(dir, target.path, r.layout, fs);
        recordCarried(r, item, record, log);
        return made;
      } finally {
        r.release();
      }
    } catch (err) {
      if (!(err instanceof MetadataWriteError)) throw err;
      // ExifTool writes the service's bytes and the input's metadata again: with less room
      // than both (and a margin) the disk is the reason, and the photo waits for room.
      const need = statSync(temp).size + sourceSize(ledger, item, target) + 1024 * 1024;
      if (err.written && fs.freeBytes(dir) < need) throw new OutputWriteError('write the metadata of', target.path, { code: 'ENOSPC' });
      record({ level: 'none', note: err.message, dateTaken: null, caption: null });
      return temp;
    }
  };
}

/** What an output carries, as ExifTool's carry says: recorded, and the input's malformed XMP sidecars warned of. */
function recordCarried(r: CarryResult, item: ItemRow, record: (m: FileMetadata) => void, log?: Logger): void {
  for (const m of r.inputSidecars.malformed) {
    log?.warn({ item: item.id, sidecar: m.file }, `XMP sidecar ${m.file} not read: ${m.why}; the photo's output is written without it`);
  }
  record({
    level: r.carried,
    note: r.note,
    dateTaken: r.dateTaken,
    caption: r.caption,
    ...(r.toSidecar ? { inSidecar: true } : {}),
    ...(r.inputSidecars.read.length > 0 ? { sidecars: r.inputSidecars.read.map((f) => path.basename(f)) } : {}),
  });
}

/**
 * carryStep for a body that streams in: its `finalize`, and for a JPEG or PNG the `splice`
 * that puts the input's metadata on it as it is written (outputs/splice.ts): ExifTool's
 * rewrite of the stand-in of the body's head, what it carries recorded as carryStep records
 * it. Errors go to the splice, which then writes the whole file and leaves its metadata to
 * `finalize`. No splice for WEBP (its EXIF and XMP follow its image data).
 */
export function carryStreamed(...args: Parameters<typeof carryStep>): { finalize?: Finalize; splice?: Splice } {
  const finalize = carryStep(...args);
  const [meta, ledger, item, target, ext, lastStep, naming, record, , log] = args;
  const kind = kindOf(ext);
  const writer = meta.writer;
  const level = meta.level;
  if (finalize === undefined || writer === null || level === 'none') return {};
  if (kind === 'webp') return { finalize };
  const head = async (si: HeadStandIn): Promise<Buffer> => {
    const provenance = provenanceOf(ledger, item, target.input, naming, lastStep, meta, target.path);
    const r = await writer.carry({ raw: si, kind, level, source: metadataSource(ledger, item, target.input), provenance });
    try {
      const first = r.layout?.[0];
      if (!Buffer.isBuffer(first) || r.layout!.length !== 1) throw new NotSpliceable("ExifTool's head did not come back");
      recordCarried(r, item, record, log);
      return first;
    } finally {
      r.release();
    }
  };
  return { finalize, splice: { kind, head } };
}
