import { createHash } from 'node:crypto';
import { rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import PQueue from 'p-queue';
import sharp from 'sharp';
import { clock } from '../clock.js';
import { makeDirs } from '../fsdirs.js';

/**
 * What the review page's browser is given of a photo's files. An input (the archive's master:
 * a TIFF, 16-bit, CMYK, a 300-megapixel scan) is never handed over itself: a browser-ready
 * preview is made with sharp on first need (8-bit sRGB JPEG, or PNG where it has
 * transparency, turned upright, at full size up to MAX_SIDE pixels a side so that the zoom to
 * 100 % shows what the scan holds) and kept in a cache beside the ledger; nor are its tags
 * (GPS, names), which the preview does not carry. An output is what the service sent and the
 * person reviews: it is served as it is when a browser shows it well (JPEG, PNG or WEBP,
 * 8-bit, not CMYK, at most MAX_SIDE a side and MAX_DIRECT_BYTES), else as a preview too.
 */

/** Longest side of a preview: what browsers decode without trouble, and more than most scans' detail at 100 %. */
const MAX_SIDE = 8192;
/** An output larger than this is previewed rather than sent whole. */
const MAX_DIRECT_BYTES = 50 * 1024 * 1024;
/** Pixels sharp may decode: a 1-gigapixel scan still gets its preview, a decompression bomb does not. */
const MAX_PIXELS = 1_000_000_000;
/** Changes when the previews' recipe changes, so an older cache is not served. */
const RECIPE = 'v1';

export interface BrowserImage {
  /** The file to send: the output itself, or a preview in the cache. */
  readonly file: string;
  readonly type: string;
  /** Whether it was made now (false: served from the cache, or the file itself). */
  readonly made: boolean;
}

/** Why a file cannot be shown. */
export class NoImage extends Error {
  constructor(readonly status: 404 | 422) {
    super(status === 404 ? 'not found' : 'not an image the preview can read');
  }
}

const TYPES: Readonly<Record<string, string>> = { jpeg: 'image/jpeg', png: 'image/png', webp: 'image/webp' };

export class Previews {
  /** sharp has its own thread pool; two previews at once keep a huge scan from starving the page's other requests. */
  private readonly queue = new PQueue({ concurrency: 2 });
  private readonly making = new Map<string, Promise<BrowserImage>>();

  constructor(private readonly cacheDir: string) {}

  /** The file to send for `file` (an input: always a preview; an output: itself when browser-ready). */
  async image(file: string, kind: 'input' | 'output'): Promise<BrowserImage> {
    let st;
    try {
      st = await clock.io(stat(file));
    } catch {
      throw new NoImage(404);
    }
    if (!st.isFile()) throw new NoImage(404);
    const name = createHash('sha256').update(`${RECIPE}\0${kind}\0${file}\0${st.size}\0${st.mtimeMs}`).digest('hex').slice(0, 32);
    const key = name;
    let p = this.making.get(key);
    if (!p) {
      p = this.resolve(file, kind, name, st.size).finally(() => this.making.delete(key));
      this.making.set(key, p);
    }
    return p;
  }

  private async resolve(file: string, kind: 'input' | 'output', name: string, bytes: number): Promise<BrowserImage> {
    for (const ext of ['jpg', 'png']) {
      const cached = path.join(this.cacheDir, `${name}.${ext}`);
      if (await exists(cached)) return { file: cached, type: ext === 'jpg' ? 'image/jpeg' : 'image/png', made: false };
    }
    let meta: sharp.Metadata;
    try {
      meta = await clock.io(sharp(file, { failOn: 'none', limitInputPixels: MAX_PIXELS }).metadata());
    } catch {
      throw new NoImage(422);
    }
    const type = meta.format !== undefined ? TYPES[meta.format] : undefined;
    const ready =
      type !== undefined &&
      (meta.depth === undefined || meta.depth === 'uchar') &&
      meta.space !== 'cmyk' &&
      Math.max(meta.width ?? 0, meta.height ?? 0) <= MAX_SIDE &&
      bytes <= MAX_DIRECT_BYTES;
    if (kind === 'output' && ready) return { file, type, made: false };
    return this.queue.add(() => this.make(file, name, meta));
  }

  private async make(file: string, name: string, meta: sharp.Metadata): Promise<BrowserImage> {
    const alpha = meta.hasAlpha === true;
    const ext = alpha ? 'png' : 'jpg';
    const target = path.join(this.cacheDir, `${name}.${ext}`);
    const tmp = `${target}.${process.pid}.tmp`;
    try {
      makeDirs(this.cacheDir);
      let img = sharp(file, { failOn: 'none', limitInputPixels: MAX_PIXELS, sequentialRead: true, animated: false })
        .rotate()
        .resize({ width: MAX_SIDE, height: MAX_SIDE, fit: 'inside', withoutEnlargement: true })
        .toColourspace('srgb');
      img = alpha ? img.png({ compressionLevel: 3 }) : img.jpeg({ quality: 90 });
      await clock.io(img.toFile(tmp));
      await clock.io(rename(tmp, target));
      return { file: target, type: alpha ? 'image/png' : 'image/jpeg', made: true };
    } catch {
      await rm(tmp, { force: true });
      throw new NoImage(422);
    }
  }
}

async function exists(file: string): Promise<boolean> {
  try {
    await clock.io(stat(file));
    return true;
  } catch {
    return false;
  }
}
