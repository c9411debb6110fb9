import { clock } from '../clock.js';
import { headStandInOf, isBulkPngChunk, NotSpliceable, type HeadStandIn } from '../metadata/standIn.js';
import { finish, prepareFolder, settle, tempPathIn, writeStreamAtomically, type BodySource, type WriteOptions } from './atomic.js';
import { writeLayout } from './layout.js';
import { Checksums, fsStep, fsStepAsync, nodeOutputFs, type FileFacts } from './outputfs.js';
import { MetadataWriteError } from '../errors.js';

/**
 * A streamed JPEG or PNG gets its metadata as it is written, in time that follows its
 * metadata, not its pixels. The body's head (a JPEG's segments before its first scan, a
 * PNG's chunks before its first image data) is held in memory as it arrives; ExifTool
 * rewrites a stand-in of it (metadata/standIn.ts headStandInOf) while the rest of the body
 * waits in the socket; then ExifTool's head goes to the temp file, and the service's bytes
 * after the head go straight after it as they arrive, checksummed on the way. The image
 * data is written once and never read back: the output is the stand-in splice of the whole
 * file (standInOf), made without first writing the whole file.
 *
 * A PNG may hold text or EXIF after its image data, which ExifTool moves before it and the
 * head's stand-in did not show it; the chunks are checked as they go by, and such a body
 * is spliced whole once it is written (its finalize, one copy more: the way every file went
 * before). So is any body whose head will not do (a JPEG with MPF pages, metadata over 32
 * MiB, a structure that cannot be walked) and any ExifTool cannot rewrite from its head:
 * the finalize then decides what it would decide on the whole file.
 */

/** What the metadata step does for a streamed body (outputs/metadata.ts headCarry). */
export interface Splice {
  readonly kind: 'jpeg' | 'png';
  /**
   * ExifTool's new head for the stand-in of the body's head, what the output carries
   * recorded; throws NotSpliceable or MetadataWriteError when the whole file is needed.
   */
  readonly head: (si: HeadStandIn) => Promise<Buffer>;
}

/** Past this much of a body without the end of its head, its metadata is too large for a stand-in (standIn.ts STAND_IN_MAX). */
const HEAD_MAX = 33 * 1024 * 1024;

/**
 * writeStreamAtomically with the body's metadata spliced in as it streams (see above):
 * `opts.finalize` is what makes the whole file's metadata when its head alone will not do.
 */
export async function writeSplicedAtomically(
  target: string,
  src: BodySource,
  outputDir: string,
  opts: WriteOptions & { readonly splice: Splice },
): Promise<FileFacts> {
  const { splice, ...write } = opts;
  const rest = src.rest;
  if (rest === null) return writeStreamAtomically(target, src, outputDir, write);
  return clock.hold(
    (async () => {
      const got = await headOf(src.head, rest, splice.kind);
      // The body as it came, for the whole file's way.
      const asItIs: BodySource = { head: got.head, rest: got.ended ? null : rest, ...(src.check ? { check: src.check } : {}) };
      if (typeof got.si === 'string') return writeStreamAtomically(target, asItIs, outputDir, write);
      let head: Buffer;
      try {
        head = await splice.head(got.si);
      } catch (err) {
        if (!(err instanceof NotSpliceable) && !(err instanceof MetadataWriteError)) throw err;
        return writeStreamAtomically(target, asItIs, outputDir, write);
      }
      return streamAfter(target, outputDir, write, { src, got, si: got.si, head });
    })(),
  );
}

interface Head {
  /** The body's first bytes, read so far. */
  readonly head: Buffer;
  readonly ended: boolean;
  /** Their head's stand-in, or why the head will not do. */
  readonly si: HeadStandIn | string;
}

/** The body's first bytes until a stand-in can be made of them: looked at again each time they have doubled, and once past HEAD_MAX. */
async function headOf(first: Buffer, rest: AsyncIterator<Uint8Array>, kind: Splice['kind']): Promise<Head> {
  const chunks = [first];
  let got = first.length;
  let looked = 0;
  let ended = false;
  for (;;) {
    if (ended || got >= 2 * looked || got > HEAD_MAX) {
      const head = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, got);
      chunks.splice(0, chunks.length, head);
      looked = got;
      const si = await headStandInOf(head, kind, ended);
      if (si !== null) return { head, ended, si };
      if (got > HEAD_MAX) return { head, ended, si: 'its metadata alone is over 32 MiB' };
    }
    const next = await rest.next();
    if (next.done) ended = true;
    else {
      chunks.push(Buffer.from(next.value.buffer, next.value.byteOffset, next.value.byteLength));
      got += next.value.byteLength;
    }
  }
}

/**
 * ExifTool's head, then the body from the stand-in's `from` on as it arrives, to a temp
 * file renamed into place. A PNG whose chunks after the head turn out to hold metadata is
 * spliced whole (PngAfterHead).
 */
async function streamAfter(
  target: string,
  outputDir: string,
  write: WriteOptions,
  at: { readonly src: BodySource; readonly got: Head; readonly si: HeadStandIn; readonly head: Buffer },
): Promise<FileFacts> {
  const { src, got, si, head } = at;
  const fs = write.fs ?? nodeOutputFs;
  const dir = prepareFolder(target, outputDir, fs);
  const temp = tempPathIn(dir);
  const fd = fsStep('create a file in', dir, () => fs.create(temp));
  const sums = new Checksums();
  const after = si.kind === 'png' ? new PngAfterHead() : null;
  let total = got.head.length;
  let open = true;
  try {
    const put = async (b: Buffer) => {
      await fsStepAsync('write', target, () => fs.writeAsync(fd, b));
      sums.update(b);
    };
    await put(head);
    const first = got.head.subarray(si.from);
    after?.feed(first);
    await put(first);
    for (;;) {
      if (got.ended) break;
      const next = await src.rest!.next();
      if (next.done) break;
      const b = Buffer.from(next.value.buffer, next.value.byteOffset, next.value.byteLength);
      total += b.length;
      after?.feed(b);
      await put(b);
    }
    src.check?.(total);
    const problem = after?.end() ?? null;
    if (problem === null) await fsStepAsync('fsync', target, () => fs.fsyncAsync(fd));
    fs.close(fd);
    open = false;
    if (problem !== null) {
      // The service's file as it came (its head, then what followed it here), spliced whole as any file the head would not do.
      const whole = await writeLayout(
        dir,
        target,
        [got.head.subarray(0, si.from), { file: temp, start: head.length, end: head.length + total - si.from }],
        fs,
      );
      fs.remove(temp);
      return await settle(whole.file, target, dir, whole.facts, fs, write, true);
    }
  } catch (err) {
    if (open) {
      try {
        fs.close(fd);
      } catch {
        // closed already
      }
    }
    fs.remove(temp);
    throw err;
  }
  const facts = sums.facts();
  finish(temp, target, dir, facts, fs, write);
  return facts;
}

/**
 * A PNG's chunks after its head, walked as the bytes go by: image data, large chunks
 * ExifTool has no reason to read, then IEND (and any trailer after it) are what its head's
 * stand-in stood for. Anything else there (text or EXIF after the image data, which
 * ExifTool moves before it; a small chunk it might edit), or a structure that does not end
 * in IEND, means the head alone did not show ExifTool the file.
 */
class PngAfterHead {
  private header: Buffer = Buffer.alloc(0);
  private skip = 0;
  private ended = false;
  private problem: string | null = null;

  feed(b: Buffer): void {
    let i = 0;
    while (i < b.length && !this.ended && this.problem === null) {
      if (this.skip > 0) {
        const n = Math.min(this.skip, b.length - i);
        this.skip -= n;
        i += n;
        continue;
      }
      const take = b.subarray(i, i + 8 - this.header.length);
      this.header = this.header.length === 0 ? take : Buffer.concat([this.header, take]);
      i += take.length;
      if (this.header.length < 8) break;
      const len = this.header.readUInt32BE(0);
      const type = this.header.toString('latin1', 4, 8);
      this.header = Buffer.alloc(0);
      if (len > 0x7fffffff) this.problem = `a PNG ${type} chunk of an impossible length`;
      else if (type === 'IEND') this.ended = true;
      else if (!isBulkPngChunk(type, len)) this.problem = `a ${type} chunk after the image data`;
      this.skip = len + 4;
    }
  }

  /** Why the head's stand-in did not stand for this file, or null. */
  end(): string | null {
    return this.problem ?? (this.ended ? null : 'a PNG without its IEND chunk');
  }
}
