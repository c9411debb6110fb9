import { closeSync, existsSync, fstatSync, openSync, readSync } from 'node:fs';
import path from 'node:path';
import { clock } from '../clock.js';
import type { ItemRow, Ledger, FileMetadata } from '../ledger/index.js';
import type { Logger } from '../log.js';
import type { Finalized, WriteOptions } from './atomic.js';
import { writeLayout } from './layout.js';
import { carryStep, carryStreamed, kindOf, metadataSource, NO_METADATA, provenanceOf, type MetadataOptions } from './metadata.js';
import { Checksums, type FileFacts, type OutputFs } from './outputfs.js';
import type { Splice } from './splice.js';
import { EXTENSIONS, sniffImage } from '../spec/images.js';
import { checkTargets, DEFAULT_OUTPUT, inside, outputTargets, relOutputPath, type NamingOptions, type OutputTarget } from './naming.js';
import { MetadataWriteError, OutputWriteError } from '../errors.js';

/**
 * What a finished photo gets besides its first output (which the download stage writes
 * itself): the outputs of its other names, the kept intermediates, the sidecars; and the
 * outputs of names found after their photo was done, copied from one already written.
 */

/**
 * A result as written to its first file: where, its size and checksums, its type, what
 * metadata it carries; `data` when the whole result was in memory anyway (the in-process
 * simulator hands results over whole).
 */
export interface WrittenResult {
  readonly path: string;
  readonly bytes: number;
  readonly facts: FileFacts;
  readonly ext: string;
  readonly meta: FileMetadata;
  readonly data?: Buffer;
}

/** Where an intermediate goes once its type is known, what is done before its rename, and its metadata as it streams (splice.ts). */
export type Placement = { readonly target: string; readonly write: WriteOptions; readonly splice?: Splice | undefined } | null;

export interface WriteIo {
  readonly outputDir: string;
  readonly naming?: NamingOptions | undefined;
  /** The input's metadata on the outputs, and the XMP sidecars; absent: none. */
  readonly metadata?: MetadataOptions | undefined;
  /** The file-system calls outputs are written through (outputs/outputfs.ts). */
  readonly fs?: OutputFs | undefined;
  /** Write a small file atomically (L4: temp file, fsync, rename, folder fsync): a sidecar. */
  readonly write: (target: string, bytes: Buffer) => Promise<FileFacts>;
  /** Another output with the content of one already written (L4 too): copied, never read into memory. */
  readonly copy: (target: string, from: WrittenResult, opts: WriteOptions) => Promise<FileFacts>;
  /** Fetch a result URL (an intermediate), checked as the final result is, straight into the file `place` names. */
  readonly download: (url: string, place: (ext: string) => Placement) => Promise<WrittenResult | null>;
  readonly log: Logger;
}

/**
 * Everything a finished photo gets besides its first output, which the download stage
 * writes itself: the outputs of its other names (duplicates), the kept intermediates, the
 * sidecars. Records every file, the first output too.
 */
export async function writeOtherOutputs(
  ledger: Ledger,
  item: ItemRow,
  result: WrittenResult,
  targets: readonly OutputTarget[],
  io: WriteIo,
): Promise<void> {
  const opts = io.naming ?? { output: DEFAULT_OUTPUT, steps: [] };
  const last = Math.max(0, opts.steps.length - 1);
  const record = (t: OutputTarget, facts: FileFacts, meta: FileMetadata) =>
    ledger.outputFiles.recordFile({
      path: t.path,
      itemId: item.id,
      inputId: t.input?.id ?? null,
      kind: 'output',
      stepIndex: last,
      bytes: facts.bytes,
      sha256: facts.sha256,
      sha512: facts.sha512,
      meta,
    });
  const outputs = new Map<string, WrittenResult>();
  // Each file is recorded before it is renamed into place (as the first output is claimed):
  // a crash between the two leaves a file this ledger owns, written again on the next run,
  // not one it would refuse as a stranger's.
  for (const [i, t] of targets.entries()) {
    if (i === 0) {
      record(t, result.facts, result.meta);
      outputs.set(t.path, result);
      continue;
    }
    let meta = result.meta;
    const finalize = repointStep(io, ledger, item, t, last, opts, result, (m) => (meta = m));
    const facts = await clock.hold(io.copy(t.path, result, { beforeRename: (f) => record(t, f, meta), ...(finalize ? { finalize } : {}) }));
    outputs.set(t.path, { ...result, path: t.path, facts, bytes: facts.bytes, meta });
  }
  if (opts.output.keepIntermediates) await writeIntermediates(ledger, item, targets, opts, io);
  for (const t of targets) {
    const written = outputs.get(t.path) ?? result;
    if (opts.output.sidecar.json) await writeSidecar(ledger, item, t, written, opts, io);
    if (opts.output.sidecar.xmp || written.meta.inSidecar) await writeXmpSidecar(ledger, item, t, last, opts, io);
  }
}

/**
 * The finalize of a copy of an output already written (another name of the same photo):
 * the same bytes, with this name's identity and original path (metadata/writer.ts repoint).
 * Nothing to do when the output carries no metadata.
 */
function repointStep(
  io: Pick<WriteIo, 'metadata' | 'log' | 'fs'>,
  ledger: Ledger,
  item: ItemRow,
  t: OutputTarget,
  lastStep: number,
  opts: NamingOptions,
  from: Pick<WrittenResult, 'meta'>,
  record: (m: FileMetadata) => void,
): ((temp: string, dir: string) => Promise<string | Finalized>) | undefined {
  const meta = io.metadata;
  const writer = meta?.writer;
  if (!meta || !writer || from.meta.level === 'none' || from.meta.inSidecar) return undefined;
  return async (temp, dir) => {
    try {
      const kind = kindOf(path.extname(t.path).slice(1).toLowerCase());
      const r = await writer.repoint(temp, kind, provenanceOf(ledger, item, t.input, opts, lastStep, meta, t.path));
      if (r === null) return temp;
      try {
        return await writeLayout(dir, t.path, r.layout, io.fs);
      } finally {
        r.release();
      }
    } catch (err) {
      if (!(err instanceof MetadataWriteError)) throw err;
      io.log.warn({ item: item.id }, `${t.path}: ${err.message}; it names the original under its other name`);
      record({ ...from.meta, note: `${err.message}; it names the original under its other name` });
      return temp;
    }
  };
}

async function writeIntermediates(
  ledger: Ledger,
  item: ItemRow,
  targets: readonly OutputTarget[],
  opts: NamingOptions,
  io: WriteIo,
): Promise<void> {
  const attempts = ledger.outputFiles.attemptsOf(item.id);
  for (let step = 0; step < opts.steps.length - 1; step++) {
    const ok = attempts.filter((a) => a.step_index === step && a.status === 'SUCCESS' && a.result_url).at(-1);
    if (!ok) continue;
    // The files this intermediate goes to, known once its type is: the first is downloaded, the others copied from it.
    let files: { file: string; t: OutputTarget }[] = [];
    let meta: FileMetadata = NO_METADATA;
    const record = (f: { file: string; t: OutputTarget }, facts: FileFacts, m: FileMetadata) =>
      ledger.outputFiles.recordFile({
        path: f.file,
        itemId: item.id,
        inputId: f.t.input?.id ?? null,
        kind: 'intermediate',
        stepIndex: step,
        bytes: facts.bytes,
        sha256: facts.sha256,
        sha512: facts.sha512,
        meta: m,
      });
    let got: WrittenResult | null;
    try {
      got = await clock.hold(
        io.download(ok.result_url!, (ext) => {
          files = [];
          for (const t of targets) {
            const file = inside(io.outputDir, relOutputPath(t.dir, t.name, ext, opts, step), item.rel_path);
            if (intermediateTaken(ledger, item, file, step, io.log)) continue;
            files.push({ file, t });
          }
          const first = files[0];
          if (!first) return null;
          const at = { ...first.t, path: first.file };
          const { finalize, splice } = io.metadata
            ? carryStreamed(io.metadata, ledger, item, at, ext, step, opts, (m) => (meta = m), io.fs, io.log)
            : {};
          return {
            target: first.file,
            write: { beforeRename: (facts) => record(first, facts, meta), ...(finalize ? { finalize } : {}) },
            splice,
          };
        }),
      );
    } catch (err) {
      // A full or read-only disk is the run's problem, not this intermediate's: the photo is retried.
      if (err instanceof OutputWriteError && err.disk) throw err;
      // Recorded just before a rename that failed (a name too long): not a file darkroom wrote.
      for (const f of files) if (!existsSync(f.file)) ledger.outputFiles.forget(f.file);
      io.log.warn(
        { item: item.id, step: step + 1 },
        `intermediate result of step ${step + 1} (${opts.steps[step]!.capability}) of ${item.rel_path} not kept: ${(err as Error).message}`,
      );
      continue;
    }
    if (got === null) continue;
    const first = { ...got, meta };
    for (const f of files.slice(1)) {
      let m = meta;
      const finalize = repointStep(io, ledger, item, { ...f.t, path: f.file }, step, opts, first, (x) => (m = x));
      await clock.hold(io.copy(f.file, first, { beforeRename: (facts) => record(f, facts, m), ...(finalize ? { finalize } : {}) }));
    }
  }
}

/** Whether another file has an intermediate's name (one this ledger did not write, or wrote for something else): warned. */
function intermediateTaken(ledger: Ledger, item: ItemRow, file: string, step: number, log: Logger): boolean {
  const owner = ledger.outputFiles.fileAt(file);
  if ((existsSync(file) && owner === undefined) || (owner !== undefined && (owner.kind !== 'intermediate' || owner.itemId !== item.id))) {
    log.warn({ item: item.id, step: step + 1 }, `intermediate ${file} not written: another file has that name`);
    return true;
  }
  return false;
}

/**
 * A name found after its photo was done gets the photo's kept intermediates as well as its
 * output, copied from another name's (no call), with this name's identity (repointStep).
 */
async function copyIntermediates(
  ledger: Ledger,
  item: ItemRow,
  target: OutputTarget,
  opts: NamingOptions,
  io: Omit<WriteIo, 'download'>,
): Promise<void> {
  for (let step = 0; step < opts.steps.length - 1; step++) {
    const source = ledger.outputFiles.intermediatesOf(item.id, step).find((p) => existsSync(p));
    if (source === undefined) continue;
    const ext = path.extname(source).slice(1);
    const file = inside(io.outputDir, relOutputPath(target.dir, target.name, ext, opts, step), item.rel_path);
    if (file === source || intermediateTaken(ledger, item, file, step, io.log)) continue;
    const was = ledger.outputFiles.fileMetadata(source) ?? NO_METADATA;
    let meta = was;
    const finalize = repointStep(io, ledger, item, { ...target, path: file }, step, opts, { meta: was }, (m) => (meta = m));
    const { size } = await clock.ioTurn(() => headOf(source));
    const from = { path: source, bytes: size, ext, meta: was, facts: { bytes: size, sha256: '', sha512: '' } };
    const record = (facts: FileFacts) =>
      ledger.outputFiles.recordFile({
        path: file,
        itemId: item.id,
        inputId: target.input?.id ?? null,
        kind: 'intermediate',
        stepIndex: step,
        bytes: facts.bytes,
        sha256: facts.sha256,
        sha512: facts.sha512,
        meta,
      });
    try {
      await clock.hold(io.copy(file, from, { beforeRename: record, ...(finalize ? { finalize } : {}) }));
    } catch (err) {
      // As for a downloaded intermediate: a full or read-only disk is the run's problem; any other, this file's alone.
      if (err instanceof OutputWriteError && err.disk) throw err;
      if (!existsSync(file)) ledger.outputFiles.forget(file);
      io.log.warn({ item: item.id, step: step + 1 }, `intermediate ${file} not written: ${(err as Error).message}`);
    }
  }
}

export interface Sidecar {
  readonly darkroom: 1;
  /** The output this file describes, relative to output.dir. */
  readonly output: string;
  readonly type: string;
  readonly bytes: number;
  readonly source: { kind: 'file'; name: string; sha256: string | null; bytes: number | null } | { kind: 'url'; name: string; url: string };
  /** Every current name of the same photo (each has an output of its own). */
  readonly sameContent: readonly string[];
  /** Signature of the step list the output was made under (src/config/steps.ts); `steps` lists it. */
  readonly stepsSig: string | null;
  readonly steps: readonly {
    step: number;
    capability: string;
    options: Record<string, string>;
    taskId: string | null;
    businessType: string | null;
    /** Every task created for the step, the last being the one whose result was used. */
    taskIds: readonly string[];
    attempts: number;
    startedAt: string | null;
    endedAt: string | null;
    durationMs: number | null;
  }[];
  readonly timings: { foundAt: string; writtenAt: string; totalMs: number; tasksMs: number };
  /** The output's SHA-256 as written (null when it was not taken). */
  readonly sha256: string | null;
  /** What the output carries of its input's metadata (output.metadata), and why not, if not. */
  readonly metadata: { readonly level: FileMetadata['level']; readonly note: string | null };
}

/** What a sidecar says of the output it describes. */
type SidecarFacts = {
  readonly bytes: number;
  readonly ext: string;
  readonly facts?: FileFacts | undefined;
  readonly meta?: FileMetadata | undefined;
};

function buildSidecar(
  ledger: Ledger,
  item: ItemRow,
  t: OutputTarget,
  result: SidecarFacts,
  opts: NamingOptions,
  outputDir: string,
): Sidecar {
  const attempts = ledger.outputFiles.attemptsOf(item.id);
  const stepCount = Math.max(opts.steps.length, ...attempts.map((a) => a.step_index + 1));
  const steps = Array.from({ length: stepCount }, (_, i) => {
    const cfg = opts.steps[i];
    const mine = attempts.filter((a) => a.step_index === i);
    const used = mine.filter((a) => a.status === 'SUCCESS').at(-1) ?? mine.at(-1);
    const options: Record<string, string> = {};
    for (const k of ['mode', 'resolution', 'style', 'prompt', 'negativePrompt'] as const) if (cfg?.[k] !== undefined) options[k] = cfg[k]!;
    return {
      step: i + 1,
      capability: cfg?.capability ?? used?.capability ?? 'unknown',
      options,
      taskId: used?.task_id ?? null,
      businessType: used?.business_type ?? null,
      taskIds: mine.map((a) => a.task_id),
      attempts: mine.length,
      startedAt: used ? iso(used.started_ms) : null,
      endedAt: used?.ended_ms != null ? iso(used.ended_ms) : null,
      durationMs: used?.ended_ms != null ? used.ended_ms - used.started_ms : null,
    };
  });
  const now = clock.now();
  const input = t.input;
  const source: Sidecar['source'] =
    input?.kind === 'url' || (!input && item.content_hash?.startsWith('url:'))
      ? { kind: 'url', name: input?.name ?? item.rel_path, url: input?.src ?? item.src_path }
      : {
          kind: 'file',
          name: input?.name ?? item.rel_path,
          sha256: item.content_hash && /^[0-9a-f]{64}$/.test(item.content_hash) ? item.content_hash : null,
          bytes: input?.size_bytes ?? item.size_bytes,
        };
  return {
    darkroom: 1,
    output: path.relative(outputDir, t.path).split(path.sep).join('/'),
    type: result.ext,
    bytes: result.bytes,
    source,
    sameContent: ledger.inputs.inputsOf(item.id).map((r) => (r.kind === 'url' ? r.src : r.name)),
    stepsSig: ledger.items.get(item.id)?.steps_sig ?? item.steps_sig ?? null,
    steps,
    timings: {
      foundAt: iso(item.created_ms),
      writtenAt: iso(now),
      totalMs: now - item.created_ms,
      tasksMs: steps.reduce((a, s) => a + (s.durationMs ?? 0), 0),
    },
    sha256: result.facts?.sha256 ?? null,
    metadata: { level: result.meta?.level ?? 'none', note: result.meta?.note ?? null },
  };
}

async function writeSidecar(
  ledger: Ledger,
  item: ItemRow,
  t: OutputTarget,
  result: SidecarFacts,
  opts: NamingOptions,
  io: Pick<WriteIo, 'outputDir' | 'write' | 'log'>,
): Promise<void> {
  const bytes = Buffer.from(`${JSON.stringify(buildSidecar(ledger, item, t, result, opts, io.outputDir), null, 2)}\n`);
  await putSidecar(ledger, item, t, `${t.path}.json`, bytes, io);
}

/**
 * <output>.xmp, the name digiKam and darktable look for: the disclosure, the provenance and
 * the input's metadata as XMP (metadata/writer.ts sidecar), whatever output.metadata puts
 * in the image itself (none: the input's tags at `all`).
 */
async function writeXmpSidecar(
  ledger: Ledger,
  item: ItemRow,
  t: OutputTarget,
  lastStep: number,
  opts: NamingOptions,
  io: Pick<WriteIo, 'outputDir' | 'write' | 'log' | 'metadata'>,
): Promise<void> {
  const meta = io.metadata;
  if (!meta?.writer) return;
  const file = `${t.path}.xmp`;
  let bytes: Buffer;
  try {
    bytes = await meta.writer.sidecar({
      level: meta.level === 'none' ? 'all' : meta.level,
      source: metadataSource(ledger, item, t.input),
      provenance: provenanceOf(ledger, item, t.input, opts, lastStep, meta, t.path),
    });
  } catch (err) {
    io.log.warn({ item: item.id }, `sidecar ${file} not written: ${(err as Error).message}`);
    return;
  }
  await putSidecar(ledger, item, t, file, bytes, io);
}

async function putSidecar(
  ledger: Ledger,
  item: ItemRow,
  t: OutputTarget,
  file: string,
  bytes: Buffer,
  io: Pick<WriteIo, 'write' | 'log'>,
): Promise<void> {
  const owner = ledger.outputFiles.fileAt(file);
  if ((existsSync(file) && owner === undefined) || (owner !== undefined && owner.kind !== 'sidecar')) {
    io.log.warn({ item: item.id }, `sidecar ${file} not written: another file has that name`);
    return;
  }
  const sums = new Checksums();
  sums.update(bytes);
  const facts = sums.facts();
  ledger.outputFiles.recordFile({
    path: file,
    itemId: item.id,
    inputId: t.input?.id ?? null,
    kind: 'sidecar',
    stepIndex: null,
    bytes: bytes.length,
    sha256: facts.sha256,
    sha512: facts.sha512,
  });
  try {
    await clock.hold(io.write(file, bytes));
  } catch (err) {
    // An output name near the 255-byte limit leaves no room for `.json` or `.xmp`: the output stands without its sidecar.
    if (!(err instanceof OutputWriteError && err.errno === 'ENAMETOOLONG')) throw err;
    if (!existsSync(file)) ledger.outputFiles.forget(file);
    io.log.warn({ item: item.id }, `sidecar ${file} not written: ${err.message}`);
  }
}

/**
 * Names found for photos already done (a file renamed, a duplicate added after its twin
 * was processed) get their output from the photo's existing one, without any call. When
 * none of the photo's outputs is left on disk, the name is reported and left without one:
 * producing it again would mean paying for the photo again. `inputIds`: only those names.
 */
export async function writeOutputsOfDone(
  ledger: Ledger,
  io: Omit<WriteIo, 'download'>,
  inputIds?: readonly number[],
): Promise<{ copied: number; missing: string[] }> {
  const opts = io.naming ?? { output: DEFAULT_OUTPUT, steps: [] };
  let copied = 0;
  const missing: string[] = [];
  for (const { input, item } of ledger.outputFiles.unwrittenOfDone(inputIds)) {
    const source = ledger.outputFiles
      .outputsOf(item.id)
      .map((o) => o.path)
      .concat(item.output_path ? [item.output_path] : [])
      .find((p) => existsSync(p));
    if (!source) {
      missing.push(input.kind === 'url' ? input.src : input.name);
      io.log.warn(
        { item: item.id },
        `no output for ${input.name}: the photo was done before, but none of its outputs is left to copy; move its other names' outputs back, or retry it`,
      );
      continue;
    }
    // Its type from its first bytes and its size: the file itself is copied by the kernel, never read in whole.
    const { head, size } = await clock.ioTurn(() => headOf(source));
    const type = sniffImage(head);
    const ext = type ? EXTENSIONS[type] : path.extname(source).slice(1);
    const target = outputTargets(ledger, item, ext, io.outputDir, opts).find((t) => t.input?.id === input.id);
    if (!target) continue;
    try {
      checkTargets(ledger, item, [target]);
    } catch (err) {
      io.log.warn({ item: item.id }, (err as Error).message);
      missing.push(input.name);
      continue;
    }
    const last = Math.max(0, opts.steps.length - 1);
    const was = ledger.outputFiles.fileMetadata(source) ?? NO_METADATA;
    let meta = was;
    let facts: FileFacts | undefined;
    // The file as recorded: with its checksums once written here, else (the same file) as it was.
    const record = (f?: FileFacts) =>
      ledger.outputFiles.recordFile({
        path: target.path,
        itemId: item.id,
        inputId: input.id,
        kind: 'output',
        stepIndex: last,
        bytes: f?.bytes ?? size,
        ...(f ? { sha256: f.sha256, sha512: f.sha512 } : {}),
        meta,
      });
    if (target.path !== source) {
      // An output written without its input's metadata (the input unreadable then) gets it now
      // if the input can be read under this name; else it is the same file under its own identity.
      const again =
        was.note !== null && io.metadata
          ? carryStep(io.metadata, ledger, item, target, ext, last, opts, (m) => (meta = m), io.fs, io.log)
          : undefined;
      const finalize = again ?? repointStep(io, ledger, item, target, last, opts, { meta: was }, (m) => (meta = m));
      const from = { path: source, bytes: size, ext, meta: was, facts: { bytes: size, sha256: '', sha512: '' } };
      facts = await clock.hold(io.copy(target.path, from, { beforeRename: record, ...(finalize ? { finalize } : {}) }));
    } else {
      record();
    }
    if (opts.output.keepIntermediates) await copyIntermediates(ledger, item, target, opts, io);
    if (opts.output.sidecar.json) await writeSidecar(ledger, item, target, { bytes: facts?.bytes ?? size, ext, facts, meta }, opts, io);
    if (opts.output.sidecar.xmp || meta.inSidecar) await writeXmpSidecar(ledger, item, target, last, opts, io);
    copied++;
  }
  return { copied, missing };
}

function headOf(file: string): { head: Buffer; size: number } {
  const fd = openSync(file, 'r');
  try {
    const head = Buffer.alloc(16);
    const n = readSync(fd, head, 0, 16, 0);
    return { head: head.subarray(0, n), size: fstatSync(fd).size };
  } finally {
    closeSync(fd);
  }
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}
