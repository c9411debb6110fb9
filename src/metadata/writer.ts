import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { clock } from '../clock.js';
import { ExifToolProcess, firstLine, type ExifToolOptions } from './exiftool.js';
import { documentIds, NO_SOURCE_IDS, oneLine, provenanceArgs, type Provenance, type SourceIds } from './provenance.js';
import { copyArgs, sidecarCopyArgs, type MetadataLevel, type OutputKind } from './tags.js';
import { ExifToolCrashed, ExifToolUnavailable, MetadataWriteError } from '../errors.js';

/**
 * Carries an input's metadata to its output with ExifTool, without touching the pixels:
 * ExifTool rewrites the metadata segments (JPEG APP1/APP13, PNG eXIf and iTXt, WEBP's EXIF
 * and XMP chunks) and copies the image data as it is, so the output decodes to exactly the
 * pixels the service sent.
 *
 * The service's bytes are in one file and the result goes to another (`-o`): the caller
 * renames that one into place (outputs/atomic.ts), so a kill at any moment leaves either no
 * output or a whole one with its metadata.
 */

/** Where the input's metadata comes from: its file, or why there is none to read. */
export type MetadataSource = { readonly file: string } | { readonly none: string };

export interface CarryRequest {
  /** The service's bytes (a temp file); only read. */
  readonly raw: string;
  /** The file to write: the service's bytes with the metadata; must not exist. */
  readonly out: string;
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
  readonly carried: Exclude<MetadataLevel, 'none'> | 'provenance';
  /** Why the input's metadata is not on the output, or null. */
  readonly note: string | null;
  /** When the photo was taken, as the input says (EXIF, XMP or IPTC), if carried. */
  readonly dateTaken: string | null;
  /** Its caption or description, if carried. */
  readonly caption: string | null;
  /** ExifTool's warnings (a tag it could not copy, a malformed directory it read around). */
  readonly warnings: readonly string[];
}

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

/** ExifTool's words when it could not write its file: a full disk among the likely reasons (MetadataWriteError.written). */
const WRITE_FAILED = /(Error )?(writing|creating|opening) (output |temporary )?file|No space|Disk quota|Read-only/i;

export class MetadataWriter {
  private readonly tool: ExifToolProcess;
  private scratch: string | undefined;
  /** Links in the scratch folder to the folders outputs are written in (viaFolderLink). */
  private readonly folders = new Map<string, string>();

  constructor(opts: ExifToolOptions = {}) {
    this.tool = new ExifToolProcess(opts);
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
   * Write `req.raw` with metadata to `req.out`. Never fails the photo for its input's
   * metadata: when that cannot be read or copied, the file gets the disclosure and
   * provenance alone (`carried: 'provenance'`, `note` why). Throws MetadataWriteError when
   * ExifTool cannot write the file at all (`written` when it said so: the disk may be full);
   * `req.out` is then absent. A command whose ExifTool died is tried once more.
   */
  async carry(req: CarryRequest): Promise<CarryResult> {
    const note: string | null = 'none' in req.source ? req.source.none : null;
    const link = 'file' in req.source ? this.linkTo(req.source.file) : null;
    try {
      return await this.carryFrom(req, link?.path ?? null, note);
    } finally {
      link?.drop();
    }
  }

  private async carryFrom(req: CarryRequest, from: string | null, given: string | null): Promise<CarryResult> {
    let note = given;
    let source = from;
    const raw = this.viaFolderLink(req.raw);
    let facts: Inspection;
    try {
      facts = await retried(() => this.inspect(source, raw));
    } catch (err) {
      if (source === null) throw new MetadataWriteError(noteOf("ExifTool cannot read the service's file", err), false, { cause: err });
      note = noteOf("ExifTool cannot read the input's metadata", err);
      source = null;
      facts = await retried(() => this.inspect(null, raw));
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
        const copy = [...copyArgs(req.level, source, req.kind), ...charset, ...fixes(facts.raw)];
        const out = await this.write(req, copy, req.level === 'all' ? summary.ids : { ...summary.ids, history: [] });
        const damage = damaged([...(facts.source?.warnings ?? []), ...out.warnings], source);
        const why =
          damage === null ? null : `the input's metadata is damaged (${damage}); ExifTool carried what it could read`.slice(0, NOTE_CHARS);
        return { carried: req.level, note: why, dateTaken: summary.dateTaken, caption: summary.caption, warnings: out.warnings };
      } catch (err) {
        rmSync(req.out, { force: true });
        // Its own file not written: the disk (or the folder) is the likelier cause than the input.
        if (WRITE_FAILED.test(firstLine(err)))
          throw new MetadataWriteError(noteOf('ExifTool cannot write the output', err), true, { cause: err });
        note = noteOf("ExifTool cannot copy the input's metadata", err);
      }
    }
    try {
      const out = await this.write(req, fixes(facts.raw), { ...summary.ids, history: [] });
      return { carried: 'provenance', note, dateTaken: null, caption: null, warnings: out.warnings };
    } catch (err) {
      rmSync(req.out, { force: true });
      throw new MetadataWriteError(noteOf("ExifTool cannot write the output's metadata", err), WRITE_FAILED.test(firstLine(err)), {
        cause: err,
      });
    }
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
    try {
      if (source !== null) {
        try {
          const ids = (await retried(() => this.inspect(source, null))).source?.summary.ids ?? NO_SOURCE_IDS;
          await retried(
            () =>
              this.tool.run([
                '-m',
                ...sidecarCopyArgs(req.level, source),
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
    }
  }

  /**
   * Another name's copy of an output already written (a duplicate, a name found after its
   * photo was done): the same file, with its own identity and the original's path under
   * this name. Pixels and every other tag are left as they are.
   */
  async repoint(from: string, out: string, provenance: Provenance): Promise<void> {
    const { documentId, instanceId } = documentIds(provenance.identity);
    try {
      await retried(
        () =>
          this.tool.run([
            '-m',
            `-XMP-xmpMM:DocumentID=${documentId}`,
            `-XMP-xmpMM:InstanceID=${instanceId}`,
            `-XMP-xmpMM:DerivedFromFilePath=${oneLine(provenance.original.path)}`,
            '-o',
            this.viaFolderLink(out),
            this.viaFolderLink(from),
          ]),
        () => rmSync(out, { force: true }),
      );
    } catch (err) {
      rmSync(out, { force: true });
      throw new MetadataWriteError(noteOf("ExifTool cannot write the output's metadata", err), WRITE_FAILED.test(firstLine(err)), {
        cause: err,
      });
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

  private async write(req: CarryRequest, copy: readonly string[], ids: SourceIds): Promise<{ warnings: readonly string[] }> {
    return retried(
      async () => {
        const out = await this.tool.run([
          '-m',
          ...copy,
          ...provenanceArgs(req.provenance, ids),
          '-o',
          this.viaFolderLink(req.out),
          this.viaFolderLink(req.raw),
        ]);
        if (!/\b1 image files? created\b/.test(out.stdout)) throw new Error(out.stdout.trim().split('\n')[0] || 'no file written');
        return out;
      },
      () => rmSync(req.out, { force: true }),
    );
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
