import { readFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import PQueue from 'p-queue';
import sharp from 'sharp';
import { clock } from '../clock.js';
import { decodeBmp } from './bmp.js';
import { SOURCE_NAMES, type SourceType } from './transcode.js';
import { InputError } from '../errors.js';

/**
 * The full decode every input gets before any call is spent on it.
 * Magic bytes and headers say what a file claims to be; only decoding every byte of its
 * compressed data says it is whole. A PNG with a corrupt zlib stream, or a JPEG cut short
 * and given back its end marker, passes every structural test and was uploaded and charged.
 *
 * sharp (libvips) decodes with `failOn: 'warning'`, its strictest level: at 'error' and
 * 'truncated' a JPEG cut in its scan data and ended with an EOI marker decodes "fine",
 * grey where the data stopped (libjpeg only warns, "premature end of data segment"). The
 * pixel limit (limits.maxInputPixels) has been checked on the header before this is called;
 * `limitInputPixels` repeats it for a header that understates its size.
 *
 * Memory: an image of up to RAW_UP_TO pixels is decoded to a raw buffer (at most 8 MB: RGBA at 16 bits);
 * a larger one through a shrink to a thumbnail, which libvips streams a few lines at a time.
 * The shrink still reads every byte of compressed data: a JPEG is shrunk by libjpeg's DCT
 * scaling, which entropy-decodes every coefficient (a truncated JPEG fails the same way at
 * 1/8 scale); a WEBP by libwebp's scaled decoding, after its whole bitstream; anything else
 * (PNG, TIFF) is decoded line by line and box-averaged, every pixel read.
 *
 * Returns null when the image is whole, else the reason it is refused.
 */
export async function decodeWhole(
  input: Buffer | string,
  type: SourceType,
  pixels: number | null,
  maxInputPixels: number,
): Promise<string | null> {
  try {
    if (type === 'bmp') {
      // Our own decoder (bmp.ts) is the one the upload converts with: it must read the file whole.
      decodeBmp(typeof input === 'string' ? await readFile(input) : input);
      return null;
    }
    const img = sharp(input, { failOn: 'warning', limitInputPixels: maxInputPixels, sequentialRead: true });
    if (pixels !== null && pixels <= RAW_UP_TO) await img.raw().toBuffer();
    else await img.resize(THUMB, THUMB, { fit: 'inside', withoutEnlargement: true }).raw().toBuffer();
    return null;
  } catch (err) {
    const detail = describe(err instanceof InputError ? err.message : String((err as Error)?.message ?? err));
    if (/exceeds pixel limit/i.test(detail)) {
      return `over limits.maxInputPixels (${maxInputPixels}) once decoded, though its header said less; scale it down, or raise limits.maxInputPixels`;
    }
    return `truncated or damaged ${SOURCE_NAMES[type]} (${detail}); replace it with a whole copy, which the next run checks again`;
  }
}

/**
 * The decoder's own line. sharp says only "Warning treated as error due to failOn setting"
 * when libvips' message was cleared by another thread, then the warnings it holds: the first
 * of those is the one that stopped this decode when it ran alone (DecodeQueue.finish).
 */
function describe(message: string): string {
  const lines = message
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  if (lines[0]?.startsWith('Warning treated as error')) return lines[1] ?? 'corrupt data';
  return lines[0] ?? 'corrupt data';
}

/** Decoded to a raw buffer as it is up to this many pixels (4 MB of RGBA, 8 MB at 16 bits); through a shrink above. */
const RAW_UP_TO = 1_000_000;
const THUMB = 64;

/**
 * Decodes at once. sharp runs each on libuv's thread pool (4 threads), which downloads and
 * file reads share; on 2 cores two decodes keep both busy (1,000 photos of 640×480: 2.6 s
 * one at a time, 1.8 s two at a time, 1.5 s four at a time, the last with no core left for
 * the rest of the process), and more than four never helps.
 */
export const DECODE_PARALLEL = Math.max(1, Math.min(4, availableParallelism()));

export interface DecodeResult {
  /** null: whole; else why the file is refused. */
  readonly reason: string | null;
  /** Decoded by this queue (a verdict to keep), not known already nor taken from a twin. */
  readonly decodedNow: boolean;
}

/**
 * A discovery's decodes: each content once (a second name of it takes the first's verdict),
 * none whose verdict is already known (the ledger's input_checks), DECODE_PARALLEL at once.
 */
export class DecodeQueue {
  readonly counts = { decoded: 0, refused: 0, known: 0 };
  /** At most DECODE_PARALLEL decodes at once: keeps the files read for decoding few, however many are found. */
  private readonly pool = new PQueue({ concurrency: DECODE_PARALLEL });
  private failure: { err: unknown } | undefined;
  private readonly results = new Map<number, DecodeResult>();
  private readonly firstOf = new Map<string, number>();
  private readonly twins: [twin: number, first: number][] = [];
  private readonly refused: { key: number; decode: () => Promise<string | null> }[] = [];

  constructor(
    private readonly maxInputPixels: number,
    private readonly verdictOf?: (contentHash: string) => string | null | undefined,
  ) {}

  /** Queue file `key` (its content, bytes or path, type and header size); waits only for a free place. */
  async add(key: number, contentHash: string, input: Buffer | string, type: SourceType, pixels: number | null): Promise<void> {
    const known = this.verdictOf?.(contentHash);
    if (known !== undefined) {
      this.counts.known++;
      this.results.set(key, { reason: known, decodedNow: false });
      return;
    }
    const first = this.firstOf.get(contentHash);
    if (first !== undefined) {
      this.counts.known++;
      this.twins.push([key, first]);
      return;
    }
    this.firstOf.set(contentHash, key);
    const decode = () => clock.io(decodeWhole(input, type, pixels, this.maxInputPixels));
    this.pool
      .add(async () => {
        const reason = await decode();
        this.counts.decoded++;
        if (reason !== null) this.refused.push({ key, decode });
        this.results.set(key, { reason, decodedNow: true });
      })
      .catch((err: unknown) => {
        this.failure ??= { err };
      });
    // Back once the decode has started: the caller reads the next file only when there is room.
    await this.pool.onSizeLessThan(1);
  }

  /** Every result by key, once all decodes are done. */
  async finish(): Promise<ReadonlyMap<number, DecodeResult>> {
    await this.pool.onIdle();
    if (this.failure) throw this.failure.err;
    // libvips keeps one error buffer for the whole process: two decodes failing at once can
    // take each other's message, or lose both ("Warning treated as error"). The verdict holds;
    // for its own message, each refused file is decoded once more, alone (damaged files are few).
    for (const r of this.refused) {
      const alone = await r.decode();
      if (alone !== null) this.results.set(r.key, { reason: alone, decodedNow: true });
    }
    this.counts.refused = this.refused.length;
    for (const [twin, first] of this.twins) this.results.set(twin, { reason: this.results.get(first)?.reason ?? null, decodedNow: false });
    return this.results;
  }
}
