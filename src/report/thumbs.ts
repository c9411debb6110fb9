import { stat } from 'node:fs/promises';
import sharp from 'sharp';
import { clock } from '../clock.js';

/** A thumbnail ready to inline, or why there is none (shown as a placeholder, never a broken image). */
export type Thumb =
  | { readonly ok: true; readonly uri: string; readonly width: number; readonly height: number; readonly bytes: number }
  | { readonly ok: false; readonly why: 'missing' | 'unreadable' | 'not recorded'; readonly detail: string };

export interface ThumbOptions {
  /** Longest side in pixels. */
  readonly size?: number;
  readonly quality?: number;
}

/** A small WEBP of an image file as a data: URI; EXIF orientation applied, never enlarged. */
export async function makeThumb(file: string | null, opts: ThumbOptions = {}): Promise<Thumb> {
  if (!file) return { ok: false, why: 'not recorded', detail: 'the ledger has no path for this file' };
  const size = opts.size ?? 240;
  try {
    const st = await clock.io(stat(file));
    if (!st.isFile()) return { ok: false, why: 'missing', detail: `${file} is not a file` };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return { ok: false, why: 'missing', detail: code === 'ENOENT' ? `${file} not found` : `${file}: ${code ?? String(err)}` };
  }
  try {
    const { data, info } = await clock.io(
      sharp(file, { failOn: 'none', animated: false })
        .rotate()
        .resize({ width: size, height: size, fit: 'inside', withoutEnlargement: true })
        .webp({ quality: opts.quality ?? 72, effort: 2 })
        .toBuffer({ resolveWithObject: true }),
    );
    return { ok: true, uri: `data:image/webp;base64,${data.toString('base64')}`, width: info.width, height: info.height, bytes: data.length };
  } catch (err) {
    const msg = String((err as Error).message ?? err).split('\n')[0] ?? 'unknown error';
    return { ok: false, why: 'unreadable', detail: `${file}: ${msg}` };
  }
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
