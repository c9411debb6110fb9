import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { clock } from '../clock.js';
import { ExifToolProcess, firstLine, type ExifToolOptions } from './exiftool.js';
import { documentIds, NO_SOURCE_IDS, oneLine, provenanceArgs, type Provenance, type SourceIds } from './provenance.js';
import { sidecarProblem, sidecarsOf } from './sidecars.js';
import { NotSpliceable, standInOf, type HeadStandIn, type Layout } from './standIn.js';
import { copyArgs, sidecarCopyArgs, type MetadataLevel, type OutputKind } from './tags.js';
import { ExifToolCrashed, ExifToolUnavailable, MetadataWriteError } from '../errors.js';

/**
 * Carries an input's metadata to its output with ExifTool, without touching the pixels:
 * ExifTool rewrites the metadata segments (JPEG APP1/APP13, PNG eXIf and iTXt, WEBP's EXIF
 * and XMP chunks) of a stand-in of the service's file (standIn.ts: the file with its image
 * data left out), and the output is that rewrite with the service's image data put back
 * (a *layout*), so the output decodes to exactly the pixels the service sent and ExifTool's
 * time and memory follow the metadata, not the pixels.
 *
 * ExifTool works only in its scratch folder; the caller writes the layout to a temp file
 * and renames that into place (outputs/), so a kill at any moment leaves either no output
 * or a whole one with its metadata.
 */

/** Where the input's metadata comes from: its file, or why there is none to read. */
export type MetadataSource = { readonly file: string } | { readonly none: string };

export interface CarryRequest {
  /**
   * The service's bytes (a temp file; only read, and only its structure and metadata), or
   * the stand-in of their head alone while the body still streams in (standIn.ts
   * headStandInOf): then the layout is ExifTool's head alone, and NotSpliceable is thrown
   * where the whole file would be needed.
   */
  readonly raw: string | HeadStandIn;
  readonly kind: OutputKind;
  readonly level: Exclude<MetadataLevel, 'none'>;
  readonly source: MetadataSource;
  readonly provenance: Provenance;
}

export interface CarryResult {
  /**
   * What the written file carries: the input's tags at the level asked, with the disclosure
   * and provenance; or `provenance` alone when the input's tags could not be carried (`note`
   * says why: no file to read, or ExifTool could not read or copy them).
   */
  readonly carried: MetadataLevel | 'provenance';
  /** Why the input's metadata is not on the output, or null. */
  readonly note: string | null;
  /** When the photo was taken, as the input says (EXIF, XMP or IPTC), if carried. */
  readonly dateTaken: string | null;
  /** Its caption or description, if carried. */
  readonly caption: string | null;
  /** ExifTool's warnings (a tag it could not copy, a malformed directory it read around). */
  readonly warnings: readonly string[];
  /**
   * The output to write: ExifTool's bytes and ranges of the service's file. null: the
   * service's bytes as they are, the metadata going to an XMP sidecar beside the output
   * (`toSidecar`: a file too large for ExifTool to rewrite whole that cannot be spliced).
   */
  readonly layout: Layout | null;
  readonly toSidecar: boolean;
  /** The input's own XMP sidecars (sidecars.ts): those read into the output, and those that are not well-formed XMP, with why. */
  readonly inputSidecars: InputSidecars;
  /** Removes ExifTool's scratch files, once the layout is written. */
  release(): void;
}

export interface InputSidecars {
  readonly read: readonly string[];
  readonly malformed: readonly { readonly file: string; readonly why: string }[];
}

const NO_SIDECARS: InputSidecars = { read: [], malformed: [] };

/** A repointed copy's layout (repoint), and its scratch files' release. */
export interface Rewritten {
  readonly layout: Layout;
  release(): void;
}

/** Where ExifTool reads the service's file (a stand-in, or the file itself), where it writes, and the output that makes. */
interface Target {
  readonly read: string;
  readonly out: string;
  layout(): Layout;
  release(): void;
}

/**
 * A file that cannot be spliced (standIn.ts) is rewritten by ExifTool whole up to this size;
 * perl holds about 2.7 times the file while it does, so this keeps it far under 600 MB.
 * Above it the metadata goes to an XMP sidecar (docs/metadata.md).
 */
const WHOLE_REWRITE_MAX = 128 * 1024 * 1024;

const EXT: Record<OutputKind, string> = { jpeg: 'jpg', png: 'png', webp: 'webp' };

interface Inspection {
  /** The input's facts, or null when it was not read (no file, or ExifTool could not read it). */
  readonly source: { readonly summary: Summary; readonly warnings: readonly string[]; readonly iptc: boolean } | null;
  readonly raw: RawFacts;
}

/** Captions longer than this are cut in the ledger and the report (the file keeps the whole). */
const CAPTION_CHARS = 500;

/** What is read of an input before its tags are copied: the report's facts, its XMP identity and history, whether it has IPTC. */
const SUMMARY_TAGS = [
  '-EXIF:DateTimeOriginal',
  '-XMP-exif:DateTimeOriginal',
  '-XMP-photoshop:DateCreated',
  '-IPTC:DateCreated',
  '-IPTC:TimeCreated',
  '-EXIF:CreateDate',
  '-XMP-xmp:CreateDate',
  '-XMP-dc:Description',
  '-IPTC:Caption-Abstract',
  '-EXIF:ImageDescription',
  '-XMP-xmpMM:DocumentID',
  '-XMP-xmpMM:InstanceID',
  '-XMP-xmpMM:OriginalDocumentID',
  '-XMP-xmpMM:History',
  '-IPTC:ApplicationRecordVersion',
  '-IPTC:Keywords',
  '-IPTC:ObjectName',
  '-IPTC:By-line',
  '-IPTC:CopyrightNotice',
  // What the service's bytes say of themselves (read in the same command).
  '-IFD0:Orientation#',
  '-ExifIFD:ColorSpace#',
  '-ICC_Profile:ProfileDescription',
];

/** What the service's bytes say of their own pixels: kept, since they describe them. */
interface RawFacts {
  readonly orientation: boolean;
  readonly colour: boolean;
}

/**
 * Written on every output with metadata, after the copy: the output's own pixel size (read
 * from the file being written, `@`); no embedded thumbnail, even one the service's bytes
 * brought along (a service that passes metadata through keeps the original's, of other
 * pixels); Orientation 1 (the pixels were turned upright before upload) and sRGB, unless the
 * service's bytes state their own orientation or colour, which describe their pixels.
 */
function fixes(raw: RawFacts): string[] {
  return [
    '-tagsFromFile',
    '@',
    '-ExifIFD:ExifImageWidth<ImageWidth',
    '-ExifIFD:ExifImageHeight<ImageHeight',
    ...(raw.orientation ? [] : ['-IFD0:Orientation#=1']),
    ...(raw.colour ? [] : ['-ExifIFD:ColorSpace#=1']),
    '-IFD1:all=',
    '-XMP-xmp:Thumbnails=',
    '-Photoshop:PhotoshopThumbnail=',
  ];
}

/** Notes end up in status lines and the report: one line, this long at most. */
const NOTE_CHARS = 200;

function noteOf(prefix: string, err: unknown): string {
  return `${prefix}: ${firstLine(err)}`.slice(0, NOTE_CHARS);
}

function mib(bytes: number): string {
  return `${Math.round(bytes / 1024 / 1024)} MiB`;
}

/** The XMP sidecars beside an input, each checked to be well-formed XMP (a malformed one is left out, with why). */
function inputSidecars(file: string): InputSidecars {
  const read: string[] = [];
  const malformed: { file: string; why: string }[] = [];
  for (const f of sidecarsOf(file)) {
    const why = sidecarProblem(f);
    if (why === null) read.push(f);
    else malformed.push({ file: f, why });
  }
  return { read, malformed };
}

/** A file too large to rewrite whole that cannot be spliced: the service's bytes as they are, the metadata in `<output>.xmp`. */
function sidecarInstead(why: string): Omit<CarryResult, 'inputSidecars'> {
  return {
    carried: 'none',
    note: `metadata in the XMP sidecar beside it: ${why}`.slice(0, NOTE_CHARS),
    dateTaken: null,
    caption: null,
    warnings: [],
    layout: null,
    toSidecar: true,
    release: () => {},
  };
}

/** ExifTool's words when it could not write its file: a full disk among the likely reasons (MetadataWriteError.written). */
const WRITE_FAILED = /(Error )?(writing|creating|opening) (output |temporary )?file|No space|Disk quota|Read-only/i;

export class MetadataWriter {
  private readonly tool: ExifToolProcess;
  private scratch: string | undefined;
  /** Links in the scratch folder to the folders outputs are written in (viaFolderLink). */
  private readonly folders = new Map<string, string>();

  private readonly wholeMax: number;
  private readonly splice: boolean;

  /**
   * `wholeRewriteMax`: the largest file ExifTool rewrites whole when it cannot be spliced
   * (WHOLE_REWRITE_MAX); `splice: false` has every file rewritten whole, as before stand-ins
   * (the tests and the bench compare the two).
   */
  constructor(opts: ExifToolOptions & { readonly wholeRewriteMax?: number; readonly splice?: boolean } = {}) {
    this.tool = new ExifToolProcess(opts);
    this.wholeMax = opts.wholeRewriteMax ?? WHOLE_REWRITE_MAX;
    this.splice = opts.splice ?? true;
  }

  /**
   * Start ExifTool and make its scratch folder (in TMPDIR): throws ExifToolUnavailable (no
   * perl, a broken install, no temp folder) before anything is spent. Scratch folders that
   * killed runs left are removed.
   */
  async start(): Promise<string> {
    const version = await this.tool.start();
    sweepScratch();
    try {
      this.scratchDir();
    } catch (err) {
      throw new ExifToolUnavailable(`there is no temp folder to work in (${firstLine(err)})`, 'set TMPDIR to a writable folder');
    }
    return version;
  }

  /**
   * The service's bytes in `req.raw` with the input's metadata: the output's layout. Never
   * fails the photo for its input's metadata: when that cannot be read or copied, the file
   * gets the disclosure and provenance alone (`carried: 'provenance'`, `note` why). Throws
   * MetadataWriteError when ExifTool cannot write the file at all (`written` when it said
   * so: the disk may be full). A command whose ExifTool died is tried once more. The caller
   * writes the layout, then calls `release`.
   */
  async carry(req: CarryRequest): Promise<CarryResult> {
    const note: string | null = 'none' in req.source ? req.source.none : null;
    const link = 'file' in req.source ? this.linkTo(req.source.file) : null;
    const sidecars = 'file' in req.source ? inputSidecars(req.source.file) : NO_SIDECARS;
    const links = sidecars.read.map((f) => this.linkTo(f));
    try {
      const raw = req.raw;
      let t = typeof raw === 'string' ? await this.target(raw, req.kind, !this.splice) : await this.headTarget(raw);
      for (;;) {
        if (typeof t === 'string') return { ...sidecarInstead(t), inputSidecars: sidecars };
        const target = t;
        try {
          const r = await this.carryFrom(
            req,
            target,
            link?.path ?? null,
            note,
            links.map((l) => l.path),
          );
          const read = r.carried === 'all' || r.carried === 'basic' ? sidecars : { ...sidecars, read: [] };
          return { ...r, layout: target.layout(), toSidecar: false, inputSidecars: read, release: () => target.release() };
        } catch (err) {
          target.release();
          if (!(err instanceof NotSpliceable) || typeof raw !== 'string') throw err;
          t = await this.target(raw, req.kind, true, err.message);
        }
      }
    } finally {
      link?.drop();
      for (const l of links) l.drop();
    }
  }

  private async carryFrom(
    req: CarryRequest,
    t: Target,
    from: string | null,
    given: string | null,
    sidecars: readonly string[],
  ): Promise<Omit<CarryResult, 'layout' | 'toSidecar' | 'release' | 'inputSidecars'>> {
    let note = given;
    let source = from;
    let facts: Inspection;
    try {
      facts = await retried(() => this.inspect(source, t.read));
    } catch (err) {
      if (source === null) throw new MetadataWriteError(noteOf("ExifTool cannot read the service's file", err), false, { cause: err });
      note = noteOf("ExifTool cannot read the input's metadata", err);
      source = null;
      facts = await retried(() => this.inspect(null, t.read));
    }
    if (source !== null && facts.source === null) {
      note = "ExifTool cannot read the input's metadata";
      source = null;
    }
    const summary = facts.source?.summary ?? EMPTY_SUMMARY;
    if (source !== null) {
      try {
        // IPTC is written in UTF-8, saying so (1:90): captions in any script arrive as they were.
        const charset = req.kind === 'jpeg' && facts.source?.iptc ? ['-IPTC:CodedCharacterSet=UTF8'] : [];
        const copy = [...copyArgs(req.level, source, req.kind, sidecars), ...charset, ...fixes(facts.raw)];
        const out = await this.write(req, t, copy, req.level === 'all' ? summary.ids : { ...summary.ids, history: [] });
        const damage = damaged([...(facts.source?.warnings ?? []), ...out.warnings], source);
        return {
          carried: req.level,
          note: damage === null ? null : carriedDespite(summary, damage),
          dateTaken: summary.dateTaken,
          caption: summary.caption,
          warnings: out.warnings,
        };
      } catch (err) {
        rmSync(t.out, { force: true });
        if (err instanceof NotSpliceable) throw err;
        // Its own file not written: the disk (or the folder) is the likelier cause than the input.
        if (WRITE_FAILED.test(firstLine(err)))
          throw new MetadataWriteError(noteOf('ExifTool cannot write the output', err), true, { cause: err });
        note = noteOf("ExifTool cannot copy the input's metadata", err);
      }
    }
    try {
      const out = await this.write(req, t, fixes(facts.raw), { ...summary.ids, history: [] });
      return { carried: 'provenance', note, dateTaken: null, caption: null, warnings: out.warnings };
    } catch (err) {
      rmSync(t.out, { force: true });
      if (err instanceof NotSpliceable) throw err;
      throw new MetadataWriteError(noteOf("ExifTool cannot write the output's metadata", err), WRITE_FAILED.test(firstLine(err)), {
        cause: err,
      });
    }
  }

  /**
   * What ExifTool works on for the service's file `raw`: its stand-in (standIn.ts), or, when
   * it cannot be spliced (`whole`, or the stand-in says why), the file itself if it is small
   * enough to be rewritten whole; else why neither (its metadata goes to an XMP sidecar).
   */
  private async target(raw: string, kind: OutputKind, whole: boolean, why?: string): Promise<Target | string> {
    const id = randomUUID();
    const out = path.join(this.scratchDir(), `out-${id}.${EXT[kind]}`);
    let reason = why ?? '';
    if (!whole) {
      const si = await clock.io(standInOf(raw, kind));
      if (typeof si !== 'string') {
        const read = path.join(this.scratchDir(), `si-${id}.${EXT[kind]}`);
        await clock.ioTurn(() => writeFileSync(read, si.bytes));
        return {
          read,
          out,
          layout: () => si.layoutOf(readFileSync(out)),
          release: () => {
            rmSync(read, { force: true });
            rmSync(out, { force: true });
          },
        };
      }
      reason = si;
    }
    const size = statSync(raw).size;
    if (size > this.wholeMax && this.splice) {
      return `${reason}; at ${mib(size)} it is over the ${mib(this.wholeMax)} ExifTool rewrites whole`;
    }
    return {
      read: this.viaFolderLink(raw),
      out,
      layout: () => [{ file: out, start: 0, end: statSync(out).size }],
      release: () => rmSync(out, { force: true }),
    };
  }

  /** What ExifTool works on for a body's head (standIn.ts headStandInOf): its layout is the output's new head. */
  private async headTarget(si: HeadStandIn): Promise<Target> {
    if (!this.splice) throw new NotSpliceable('every file is rewritten whole (splice: false)');
    const id = randomUUID();
    const read = path.join(this.scratchDir(), `si-${id}.${EXT[si.kind]}`);
    const out = path.join(this.scratchDir(), `out-${id}.${EXT[si.kind]}`);
    await clock.ioTurn(() => writeFileSync(read, si.bytes));
    return {
      read,
      out,
      layout: () => [si.headOf(readFileSync(out))],
      release: () => {
        rmSync(read, { force: true });
        rmSync(out, { force: true });
      },
    };
  }

  /**
   * The XMP sidecar of an output (`<output>.xmp`, as digiKam and darktable name them): the
   * disclosure and provenance, and the input's tags at `level` with its EXIF and IPTC
   * translated to XMP by ExifTool's own mappings. Returns the file's bytes.
   */
  async sidecar(req: {
    readonly level: Exclude<MetadataLevel, 'none'>;
    readonly source: MetadataSource;
    readonly provenance: Provenance;
  }): Promise<Buffer> {
    const file = path.join(this.scratchDir(), `${randomUUID()}.xmp`);
    const link = 'file' in req.source ? this.linkTo(req.source.file) : null;
    const source = link?.path ?? null;
    const links = ('file' in req.source ? inputSidecars(req.source.file) : NO_SIDECARS).read.map((f) => this.linkTo(f));
    try {
      if (source !== null) {
        try {
          const ids = (await retried(() => this.inspect(source, null))).source?.summary.ids ?? NO_SOURCE_IDS;
          await retried(
            () =>
              this.tool.run([
                '-m',
                ...sidecarCopyArgs(
                  req.level,
                  source,
                  links.map((l) => l.path),
                ),
                ...provenanceArgs(req.provenance, req.level === 'all' ? ids : { ...ids, history: [] }),
                '-o',
                file,
              ]),
            () => rmSync(file, { force: true }),
          );
          return await clock.ioTurn(() => readFileSync(file));
        } catch {
          rmSync(file, { force: true });
        }
      }
      await retried(
        () => this.tool.run(['-m', ...provenanceArgs(req.provenance, NO_SOURCE_IDS), '-o', file]),
        () => rmSync(file, { force: true }),
      );
      return await clock.ioTurn(() => readFileSync(file));
    } finally {
      rmSync(file, { force: true });
      link?.drop();
      for (const l of links) l.drop();
    }
  }

  /**
   * Another name's copy of an output already written (a duplicate, a name found after its
   * photo was done): the same file, with its own identity and the original's path under
   * this name. Pixels and every other tag are left as they are. Returns the copy's layout
   * (null: `from` cannot be rewritten, too large and not spliceable: the copy is `from` as it is).
   */
  async repoint(from: string, kind: OutputKind, provenance: Provenance): Promise<Rewritten | null> {
    const { documentId, instanceId } = documentIds(provenance.identity);
    let t = await this.target(from, kind, !this.splice);
    for (;;) {
      if (typeof t === 'string') return null;
      const target = t;
      try {
        await retried(
          () =>
            this.tool.run([
              '-m',
              `-XMP-xmpMM:DocumentID=${documentId}`,
              `-XMP-xmpMM:InstanceID=${instanceId}`,
              `-XMP-xmpMM:DerivedFromFilePath=${oneLine(provenance.original.path)}`,
              '-o',
              target.out,
              target.read,
            ]),
          () => rmSync(target.out, { force: true }),
        );
        return { layout: target.layout(), release: () => target.release() };
      } catch (err) {
        target.release();
        if (err instanceof NotSpliceable) {
          t = await this.target(from, kind, true, err.message);
          continue;
        }
        throw new MetadataWriteError(noteOf("ExifTool cannot write the output's metadata", err), WRITE_FAILED.test(firstLine(err)), {
          cause: err,
        });
      }
    }
  }

  /** Tags of a file as ExifTool reads them (`-G1` names: `ExifIFD:DateTimeOriginal`, `XMP-dc:Title`…); for checks and tests. */
  async read(file: string, tags: readonly string[] = []): Promise<Record<string, unknown>> {
    const out = await this.tool.run(['-j', '-G1', '-struct', ...tags, file]);
    return (JSON.parse(out.stdout) as Record<string, unknown>[])[0] ?? {};
  }

  async end(): Promise<void> {
    await this.tool.end();
    if (this.scratch) rmSync(this.scratch, { recursive: true, force: true });
  }

  private async write(req: CarryRequest, t: Target, copy: readonly string[], ids: SourceIds): Promise<{ warnings: readonly string[] }> {
    const out = await retried(
      async () => {
        const o = await this.tool.run(['-m', ...copy, ...provenanceArgs(req.provenance, ids), '-o', t.out, t.read]);
        if (!/\b1 image files? created\b/.test(o.stdout)) throw new Error(o.stdout.trim().split('\n')[0] || 'no file written');
        return o;
      },
      () => rmSync(t.out, { force: true }),
    );
    // Warnings name the file ExifTool read: the stand-in is the service's file.
    return out;
  }

  /**
   * One command reads the input's summary and what the service's bytes say of themselves.
   * `source` null: the service's file alone; `raw` null: the input alone.
   */
  private async inspect(source: string | null, raw: string | null): Promise<Inspection> {
    const files = [source, raw].filter((f): f is string => f !== null);
    const out = await this.tool.run(['-j', '-G1', '-struct', ...SUMMARY_TAGS, ...files]);
    const all = JSON.parse(out.stdout || '[]') as Record<string, unknown>[];
    const of = (f: string | null) => (f === null ? undefined : all.find((t) => t.SourceFile === f));
    const s = of(source);
    const r = of(raw) ?? {};
    return {
      source:
        s === undefined
          ? null
          : {
              summary: summarize(s),
              warnings: out.warnings.filter((w) => source !== null && w.endsWith(` - ${source}`)),
              iptc: Object.keys(s).some((k) => k.startsWith('IPTC:')),
            },
      raw: {
        orientation: r['IFD0:Orientation'] !== undefined,
        colour: r['ExifIFD:ColorSpace'] !== undefined || r['ICC_Profile:ProfileDescription'] !== undefined,
      },
    };
  }
  /** A private folder for sidecars in the making (ExifTool names a new file's type by its extension) and the links below. */
  private scratchDir(): string {
    // Named by this process, so a later run knows whose it is (sweepScratch).
    this.scratch ??= mkdtempSync(path.join(tmpdir(), `darkroom-exiftool-${process.pid}-`));
    return this.scratch;
  }

  /**
   * An input's own name is the operator's or a donor's, and ExifTool reads file names given
   * to -tagsFromFile and -o as patterns: `%d`, `%f`, `%e` in a name ("50%dogs.jpg") are
   * replaced, and a line break would end the argument. So ExifTool is only ever given names
   * of darkroom's making: a link to the input in the scratch folder (with the input's
   * extension, which ExifTool reads the type by), removed after use. Where a link cannot be
   * made, the name is given as it is.
   */
  private linkTo(file: string): { path: string; drop: () => void } {
    const link = path.join(this.scratchDir(), `in-${randomUUID()}${safeExt(file)}`);
    try {
      symlinkSync(path.resolve(file), link);
      return { path: link, drop: () => rmSync(link, { force: true }) };
    } catch {
      return { path: file, drop: () => {} };
    }
  }

  /** The same file through a link to its folder (an output folder may be named anything too); its own name is darkroom's. */
  private viaFolderLink(file: string): string {
    const dir = path.dirname(path.resolve(file));
    let link = this.folders.get(dir);
    if (link === undefined) {
      link = path.join(this.scratchDir(), `dir-${this.folders.size}`);
      try {
        symlinkSync(dir, link, process.platform === 'win32' ? 'junction' : 'dir');
      } catch {
        link = dir;
      }
      this.folders.set(dir, link);
    }
    return path.join(link, path.basename(file));
  }
}

/**
 * ExifTool reads around damage and says so in a warning naming the file ("Bad IFD0
 * directory - photo.jpg", "JPEG format error - …"): the first such warning about the input,
 * without the file's name; null when there is none. "No writable tags set" only means the
 * input had nothing to carry.
 */
function damaged(warnings: readonly string[], source: string): string | null {
  for (const w of warnings) {
    if (!w.endsWith(` - ${source}`) || /No writable tags set/i.test(w)) continue;
    return w.slice(0, -(source.length + 3)).replace(/^Warning:\s*(\[minor\]\s*)?/i, '');
  }
  return null;
}

/**
 * The note of an output whose input's metadata was carried although ExifTool warned of a
 * damaged part: what it carried, and what it did not (one line: status, the report, the log).
 */
function carriedDespite(summary: Summary, damage: string): string {
  const named = [summary.dateTaken !== null ? 'the date taken' : null, summary.caption !== null ? 'the caption' : null].filter(
    (x): x is string => x !== null,
  );
  const what = named.length > 0 ? `${named.join(', ')} and all else ExifTool could read` : 'all ExifTool could read';
  return `carried ${what}; not carried: the damaged part of the input's metadata (${damage})`.slice(0, NOTE_CHARS);
}

/** The original's History events, as ExifTool reads them with -struct (one event alone comes as an object). */
function historyOf(v: unknown): Record<string, unknown>[] {
  const list = Array.isArray(v) ? v : v !== null && typeof v === 'object' ? [v] : [];
  return list.filter((e): e is Record<string, unknown> => e !== null && typeof e === 'object');
}

/** A command tried once more when ExifTool died under it (a new process answers the second), after `cleanup`. */
async function retried<T>(fn: () => Promise<T>, cleanup: () => void = () => {}): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (!(err instanceof ExifToolCrashed)) throw err;
    cleanup();
    return fn();
  }
}

/** The scratch folders of darkroom processes that are gone (a kill -9): their links and sidecars in the making. */
function sweepScratch(): void {
  let names: string[];
  try {
    names = readdirSync(tmpdir());
  } catch {
    return;
  }
  for (const n of names) {
    const pid = /^darkroom-exiftool-(\d+)-/.exec(n)?.[1];
    if (pid === undefined || Number(pid) === process.pid || alive(Number(pid))) continue;
    // Links are removed, never followed.
    rmSync(path.join(tmpdir(), n), { recursive: true, force: true });
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The input's extension when it is a plain one (ExifTool tells the type by it first), else none (it reads the magic bytes). */
function safeExt(file: string): string {
  const ext = path.extname(file);
  return /^\.[A-Za-z0-9]{1,8}$/.test(ext) ? ext : '';
}

interface Summary {
  readonly dateTaken: string | null;
  readonly caption: string | null;
  readonly ids: SourceIds;
}

const EMPTY_SUMMARY: Summary = { dateTaken: null, caption: null, ids: NO_SOURCE_IDS };

/** The report's facts from an input's tags (`-G1 -j`), each from the first place that states it. */
export function summarize(tags: Record<string, unknown>): Summary {
  const get = (...keys: string[]): string | null => {
    for (const k of keys) {
      const v = tags[k];
      if (v !== undefined && v !== null && String(v).trim() !== '') return String(v).trim();
    }
    return null;
  };
  const iptcDate = get('IPTC:DateCreated');
  const iptcTime = get('IPTC:TimeCreated');
  const taken =
    get('ExifIFD:DateTimeOriginal', 'XMP-exif:DateTimeOriginal', 'XMP-photoshop:DateCreated') ??
    (iptcDate !== null ? `${iptcDate}${iptcTime !== null ? ` ${iptcTime}` : ''}` : null) ??
    get('ExifIFD:CreateDate', 'XMP-xmp:CreateDate');
  const caption = get('XMP-dc:Description', 'IPTC:Caption-Abstract', 'IFD0:ImageDescription');
  return {
    dateTaken: taken === null ? null : taken.replace(/^(\d{4}):(\d{2}):(\d{2})/, '$1-$2-$3'),
    caption: caption === null ? null : caption.length > CAPTION_CHARS ? `${caption.slice(0, CAPTION_CHARS - 1)}…` : caption,
    ids: {
      documentId: get('XMP-xmpMM:DocumentID'),
      instanceId: get('XMP-xmpMM:InstanceID'),
      originalDocumentId: get('XMP-xmpMM:OriginalDocumentID'),
      history: historyOf(tags['XMP-xmpMM:History']),
    },
  };
}
