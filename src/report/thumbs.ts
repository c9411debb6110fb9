import { createHash } from 'node:crypto';
import { access, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import { clock } from '../clock.js';
import { makeDirs } from '../fsdirs.js';

/**
 * What the report says about one image file: its format, dimensions and size, read from the
 * file itself (the result's real type, whatever its name says), and the name of its thumbnail
 * in the thumbnails folder. Or why there is none: shown as a placeholder, never a broken image.
 */
export type FileFacts =
  | {
      readonly ok: true;
      /** sharp's name for it: jpeg, png, webp, tiff, gif, heif… */
      readonly format: string;
      /** As displayed (EXIF orientation applied). */
      readonly width: number;
      readonly height: number;
      readonly bytes: number;
      /** File name in the thumbnails folder, or null when none was asked for or it failed. */
      readonly thumb: string | null;
    }
  | { readonly ok: false; readonly why: 'missing' | 'unreadable' | 'not recorded'; readonly detail: string };

export interface ThumbOptions {
  /** Where thumbnails go; null: read the facts only. */
  readonly dir: string | null;
  /** Longest side in pixels (default 160). */
  readonly size?: number;
  /** WEBP quality (default 70). */
  readonly quality?: number;
}

/**
 * The facts of `file`, and its thumbnail written into `opts.dir` unless one is there already.
 * A thumbnail is named after the file's path, size and mtime (hashed: no path of the machine
 * in the name), so a report made again reuses every thumbnail of a file that did not change.
 */
export async function inspectImage(file: string | null, opts: ThumbOptions): Promise<FileFacts> {
  if (!file) return { ok: false, why: 'not recorded', detail: 'the ledger has no path for this file' };
  const size = opts.size ?? 160;
  let st;
  try {
    st = await clock.io(stat(file));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return { ok: false, why: 'missing', detail: code === 'ENOENT' ? 'not found' : (code ?? String(err)) };
  }
  if (!st.isFile()) return { ok: false, why: 'missing', detail: 'not a file' };
  let meta;
  try {
    meta = await clock.io(sharp(file, { failOn: 'none' }).metadata());
  } catch (err) {
    return { ok: false, why: 'unreadable', detail: firstLine(err) };
  }
  const turned = (meta.orientation ?? 1) >= 5;
  const facts = {
    ok: true as const,
    format: meta.format,
    width: turned ? meta.height : meta.width,
    height: turned ? meta.width : meta.height,
    bytes: st.size,
  };
  if (opts.dir === null) return { ...facts, thumb: null };
  const name = `${createHash('sha256').update(`${file}\0${st.size}\0${st.mtimeMs}\0${size}`).digest('hex').slice(0, 24)}.webp`;
  const target = path.join(opts.dir, name);
  try {
    await clock.io(access(target));
    return { ...facts, thumb: name };
  } catch {
    // not made yet
  }
  const tmp = `${target}.${process.pid}.tmp`;
  try {
    makeDirs(opts.dir);
    await clock.io(
      sharp(file, { failOn: 'none', animated: false })
        .rotate()
        .resize({ width: size, height: size, fit: 'inside', withoutEnlargement: true })
        .webp({ quality: opts.quality ?? 70, effort: 1 })
        .toFile(tmp),
    );
    await clock.io(rename(tmp, target));
    return { ...facts, thumb: name };
  } catch {
    await rm(tmp, { force: true });
    return { ...facts, thumb: null };
  }
}

function firstLine(err: unknown): string {
  return String((err as Error)?.message ?? err).split('\n')[0] ?? 'unknown error';
}

/** Map over `list` with at most `limit` tasks in flight, keeping the order of results. */
export async function mapLimited<T, R>(list: readonly T[], limit: number, fn: (x: T, i: number) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(list.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    for (;;) {
      const i = next++;
      if (i >= list.length) return;
      out[i] = await fn(list[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, list.length)) }, worker));
  return out;
}
