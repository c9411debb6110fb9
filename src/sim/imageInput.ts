/**
 * A create's `image`: an http(s) URL, never base64 data. An `image` URL on the result
 * origin (an upload, an earlier task's result) is resolved from memory, never over the
 * network; any other http(s) URL is fetched (no key sent), at most 20 MB of JPG/PNG/WEBP.
 */
import { request as httpRequest } from 'undici';
import { clock } from '../clock.js';
import { EXTENSIONS, sniffImage } from '../spec/images.js';
import type { Parsed } from './params.js';
import { CODES } from './responses.js';
import { RESULT_PATH_RE, UPLOAD_PATH_RE } from './routes.js';
import type { ResolvedImage, TaskBook } from './taskBook.js';
import { statusAt } from './tasks.js';
import { MAX_UPLOAD_BYTES, sha16, type UploadStore } from './uploads.js';

export class ImageInput {
  constructor(
    private readonly resultOrigin: string,
    private readonly uploads: UploadStore,
    private readonly tasks: TaskBook,
  ) {}

  async resolve(image: string): Promise<Parsed<ResolvedImage>> {
    const notUrl = 'image must be an http(s) URL; base64 data is rejected';
    if (/^data:/i.test(image)) return bad(notUrl);
    let url: URL;
    try {
      url = new URL(image);
    } catch {
      return bad(notUrl);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return bad(notUrl);
    if (url.origin === this.resultOrigin) return this.resolveInternal(url.pathname);
    return fetchExternal(url);
  }

  /** The sim's own uploads and results are resolved from memory, never over the network. */
  private resolveInternal(pathname: string): Parsed<ResolvedImage> {
    const up = UPLOAD_PATH_RE.exec(pathname);
    if (up) {
      const u = this.uploads.forCreate(up[1]!, up[2]!);
      if (!u) return bad('image not found');
      return { ok: true, value: { input: { kind: 'upload', uploadId: up[1]! }, inputType: u.type, sourceId: u.sourceId } };
    }
    const res = RESULT_PATH_RE.exec(pathname);
    if (res) {
      const t = this.tasks.live(res[1]!);
      if (!t || EXTENSIONS[t.resultType] !== res[2] || statusAt(t, clock.now()) !== 'SUCCESS') return bad('image not found');
      return { ok: true, value: { input: { kind: 'result', taskId: t.taskId }, inputType: t.resultType, sourceId: t.sourceId } };
    }
    return bad('image not found');
  }
}

async function fetchExternal(url: URL): Promise<Parsed<ResolvedImage>> {
  let bytes: Buffer;
  try {
    const res = await httpRequest(url, { method: 'GET', headersTimeout: 15_000, bodyTimeout: 30_000 });
    if (res.statusCode !== 200) {
      await res.body.dump();
      return bad(`image URL answered HTTP ${res.statusCode}`);
    }
    const chunks: Buffer[] = [];
    let total = 0;
    for await (const chunk of res.body) {
      const b = chunk as Buffer;
      total += b.length;
      if (total > MAX_UPLOAD_BYTES) {
        res.body.destroy();
        return bad(`image is larger than ${MAX_UPLOAD_BYTES} bytes`);
      }
      chunks.push(b);
    }
    bytes = Buffer.concat(chunks);
  } catch {
    return bad('image URL could not be fetched');
  }
  const type = sniffImage(bytes);
  if (!type) return bad('image URL is not a JPG, PNG or WEBP image');
  return { ok: true, value: { input: { kind: 'bytes', bytes }, inputType: type, sourceId: `url:${sha16(Buffer.from(url.href))}` } };
}

function bad(message: string): { ok: false; code: number; message: string } {
  return { ok: false, code: CODES.PARAM, message };
}
