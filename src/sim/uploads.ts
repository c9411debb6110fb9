/**
 * The service's store of uploaded images: the upload endpoint, and what a create or a GET
 * of an upload's URL finds there. Decisions:
 * - Uploads: JPG/PNG/WEBP by magic bytes, at most 20 MB, else 400/-2.
 * - An upload may be forgotten at a create (forgottenUpload, faults.ts), at most once per
 *   source image: -2 for creates and 404 for GETs from then on. Tasks made from it before
 *   still read its bytes.
 */
import { createHash } from 'node:crypto';
import type { AuditRecorder } from './audit.js';
import type { FaultInjector } from './faultInjector.js';
import { EXTENSIONS, sniffImage, type ImageType } from '../spec/images.js';
import type { Rng } from './random.js';
import { ok, paramError, type SimRequest, type SimResponse } from './responses.js';

export const MAX_UPLOAD_BYTES = 20 * 1024 * 1024;

interface Upload {
  bytes: Buffer;
  type: ImageType;
  sourceId: string;
}

export class UploadStore {
  private readonly uploads = new Map<string, Upload>();
  /** Uploads the service has forgotten (forgottenUpload): gone for creates and GETs. */
  private readonly forgottenUploads = new Set<string>();
  /** Source images that already lost an upload (each loses at most one). */
  private readonly forgottenSources = new Set<string>();
  private uploadSeq = 0;

  constructor(
    private readonly resultOrigin: string,
    private readonly idRng: Rng,
    private readonly faults: FaultInjector,
    private readonly recorder: AuditRecorder,
  ) {}

  /**
   * The body is read as the platform reads a form (Request.formData(): RFC 7578, quoted or
   * bare boundaries, a preamble; a body cut before its closing delimiter is refused). It
   * parses in microtasks, so in-process virtual time does not move during the call.
   */
  async upload(req: SimRequest, fingerprint: string, requestId: string): Promise<SimResponse> {
    const contentType = req.headers['content-type'] ?? '';
    if (!/^\s*multipart\/form-data\s*;(.*;)?\s*boundary=/i.test(contentType)) {
      return paramError(requestId, 'Content-Type must be multipart/form-data with a boundary');
    }
    if (req.body.length > MAX_UPLOAD_BYTES + 64 * 1024) {
      return paramError(requestId, `file is larger than ${MAX_UPLOAD_BYTES} bytes`);
    }
    let form: FormData;
    try {
      form = await new Request('http://sim.invalid/', {
        method: 'POST',
        headers: { 'content-type': contentType },
        body: req.body,
      }).formData();
    } catch {
      return paramError(requestId, 'malformed multipart/form-data body');
    }
    const part = form.get('image');
    if (typeof part === 'string' || part === null || part.size === 0) {
      return paramError(requestId, 'image file is required (form field "image")');
    }
    if (part.size > MAX_UPLOAD_BYTES) return paramError(requestId, `file is larger than ${MAX_UPLOAD_BYTES} bytes`);
    const bytes = Buffer.from(await part.arrayBuffer());
    const type = sniffImage(bytes);
    if (!type) return paramError(requestId, 'unsupported image type; accepted: JPG, JPEG, PNG, WEBP');

    const id = `u${(++this.uploadSeq).toString(16).padStart(6, '0')}${this.idRng.hex(10)}`;
    const sourceId = sha16(bytes);
    this.uploads.set(id, { bytes, type, sourceId });
    this.recorder.uploaded(fingerprint, sourceId);
    return ok(requestId, { imageUrl: `${this.resultOrigin}/uploads/${id}.${EXTENSIONS[type]}` });
  }

  /** What a GET of an upload's URL serves: undefined when unknown or forgotten. */
  served(id: string): Upload | undefined {
    return this.forgottenUploads.has(id) ? undefined : this.uploads.get(id);
  }

  /**
   * The upload a create names; undefined when unknown, of another format or forgotten,
   * which may happen at this very create (forgottenUpload).
   */
  forCreate(id: string, ext: string): Upload | undefined {
    const u = this.uploads.get(id);
    if (!u || EXTENSIONS[u.type] !== ext || this.forgottenUploads.has(id)) return undefined;
    if (!this.forgottenSources.has(u.sourceId) && this.faults.forgottenUpload()) {
      this.forgottenUploads.add(id);
      this.forgottenSources.add(u.sourceId);
      this.recorder.fault('forgottenUpload');
      return undefined;
    }
    return u;
  }

  /** A task's input bytes, forgotten or not: the task was made while the upload was known. */
  bytesOf(id: string): Buffer {
    const u = this.uploads.get(id);
    if (!u) throw new Error(`upload ${id} vanished`);
    return u.bytes;
  }
}

export function sha16(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex').slice(0, 16);
}
