import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { clock } from '../clock.js';
import { ExifToolProcess, firstLine, type ExifToolOptions } from './exiftool.js';
import { documentIds, NO_SOURCE_IDS, oneLine, provenanceArgs, type Provenance, type SourceIds } from './provenance.js';
import { copyArgs, sidecarCopyArgs, type MetadataLevel, type OutputKind } from './tags.js';

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

/** ExifTool failed to write even the disclosure: the caller keeps the service's bytes as they are. */
export class MetadataWriteError extends Error {
  override readonly name = 'MetadataWriteError';
}

/** Captions longer than this are cut in the ledger and the report (the file keeps the whole). */
const CAPTION_CHARS = 500;

/** What is read of an input before its tags are copied: the report's facts and its XMP identity. */
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
];

/**
 * Written on every output with metadata, after the copy: Orientation 1 (the pixels were
 * turned upright before upload), sRGB, and the output's own pixel size (read from the file
 * being written, `@`); and no embedded thumbnail, even one the service's bytes brought
 * along (a service that passes EXIF through would keep the original's, of other pixels).
 */
const FIXES = [
  '-tagsFromFile',
  '@',
  '-ExifIFD:ExifImageWidth<ImageWidth',
  '-ExifIFD:ExifImageHeight<ImageHeight',
  '-IFD0:Orientation#=1',
  '-ExifIFD:ColorSpace#=1',
  '-IFD1:all=',
  '-XMP-xmp:Thumbnails=',
];

export class MetadataWriter {
  private readonly tool: ExifToolProcess;
  private scratch: string | undefined;
  /** Links in the scratch folder to the folders outputs are written in (viaFolderLink). */
  private readonly folders = new Map<string, string>();

  constructor(opts: ExifToolOptions = {}) {
    this.tool = new ExifToolProcess(opts);
  }

  /** Start ExifTool: throws ExifToolUnavailable (no perl, a broken install) before anything is spent. */
  start(): Promise<string> {
    return this.tool.start();
  }

  /**
   * Write `req.raw` with metadata to `req.out`. Never fails the photo for its input's
   * metadata: when that cannot be read or copied, the file gets the disclosure and
   * provenance alone (`carried: 'provenance'`, `note` why). Throws MetadataWriteError only
   * when ExifTool cannot write the file at all; `req.out` is then absent.
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
    let summary: Summary = EMPTY_SUMMARY;
    let source = from;
    let readWarnings: readonly string[] = [];
    if (source !== null) {
      try {
        const read = await this.summary(source);
        summary = read.summary;
        readWarnings = read.warnings;
      } catch (err) {
        note = `ExifTool cannot read the input's metadata: ${firstLine(err)}`;
        source = null;
      }
    }
    if (source !== null) {
      try {
        const out = await this.write(req, [...copyArgs(req.level, source, req.kind), ...FIXES], summary.ids);
        const damage = damaged([...readWarnings, ...out.warnings], source);
        const why = damage === null ? null : `the input's metadata is damaged (${damage}); ExifTool carried what it could read`;
        return { carried: req.level, note: why, dateTaken: summary.dateTaken, caption: summary.caption, warnings: out.warnings };
      } catch (err) {
        note = `ExifTool cannot copy the input's metadata: ${firstLine(err)}`;
        rmSync(req.out, { force: true });
      }
    }
    try {
      const out = await this.write(req, FIXES, summary.ids);
      return { carried: 'provenance', note, dateTaken: null, caption: null, warnings: out.warnings };
    } catch (err) {
      rmSync(req.out, { force: true });
      throw new MetadataWriteError(`ExifTool cannot write the output's metadata: ${firstLine(err)}`, { cause: err });
    }
  }

  /**
   * The XMP sidecar of an output (`<output>.xmp`, as digiKam and darktable name them): the
   * disclosure and provenance, and the input's tags at `level` with its EXIF and IPTC
   * translated to XMP by ExifTool's own mappings. Returns the file's bytes.
   */
  async sidecar(req: { readonly level: Exclude<MetadataLevel, 'none'>; readonly source: MetadataSource; readonly provenance: Provenance }): Promise<Buffer> {
    const file = path.join(this.scratchDir(), `${randomUUID()}.xmp`);
    const link = 'file' in req.source ? this.linkTo(req.source.file) : null;
    const source = link?.path ?? null;
    try {
      let ids = NO_SOURCE_IDS;
      if (source !== null) {
        try {
          ids = (await this.summary(source)).summary.ids;
          await this.tool.run(['-m', ...sidecarCopyArgs(req.level, source), ...provenanceArgs(req.provenance, ids), '-o', file]);
          return await clock.ioTurn(() => readFileSync(file));
        } catch {
          rmSync(file, { force: true });
        }
      }
      await this.tool.run(['-m', ...provenanceArgs(req.provenance, ids), '-o', file]);
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
      await this.tool.run([
        '-m',
        `-XMP-xmpMM:DocumentID=${documentId}`,
        `-XMP-xmpMM:InstanceID=${instanceId}`,
        `-XMP-xmpMM:DerivedFromFilePath=${oneLine(provenance.original.path)}`,
        '-o',
        this.viaFolderLink(out),
        this.viaFolderLink(from),
      ]);
    } catch (err) {
      rmSync(out, { force: true });
      throw new MetadataWriteError(`ExifTool cannot write the output's metadata: ${firstLine(err)}`, { cause: err });
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
    const out = await this.tool.run(['-m', ...copy, ...provenanceArgs(req.provenance, ids), '-o', this.viaFolderLink(req.out), this.viaFolderLink(req.raw)]);
    if (!/\b1 image files? created\b/.test(out.stdout)) throw new Error(out.stdout.trim().split('\n')[0] || 'no file written');
    return out;
  }

  private async summary(source: string): Promise<{ summary: Summary; warnings: readonly string[] }> {
    const out = await this.tool.run(['-j', '-G1', ...SUMMARY_TAGS, source]);
    const tags = (JSON.parse(out.stdout) as Record<string, unknown>[])[0] ?? {};
    return { summary: summarize(tags), warnings: out.warnings };
  }

  /** A private folder for sidecars in the making (ExifTool names a new file's type by its extension) and the links below. */
  private scratchDir(): string {
    this.scratch ??= mkdtempSync(path.join(tmpdir(), 'darkroom-exiftool-'));
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
    },
  };
}
