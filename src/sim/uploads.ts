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
import { sniffImage, type ImageExt } from './images.js';
import { boundaryOf, parseMultipart } from './multipart.js';
import type { Rng } from './random.js';
import { ok, paramError, type SimRequest, type SimResponse } from './responses.js';

export const MAX_UPLOAD_BYTES = 20 * 1024 * 1024;

interface Upload {
  bytes: Buffer;
  ext: ImageExt;
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

  upload(req: SimRequest, fingerprint: string, requestId: string): SimResponse {
    const boundary = boundaryOf(req.headers['content-type']);
    if (!boundary) return paramError(requestId, 'Content-Type must be multipart/form-data with a boundary');
    if (req.body.length > MAX_UPLOAD_BYTES + 64 * 1024) {
      return paramError(requestId, `file is larger than ${MAX_UPLOAD_BYTES} bytes`);
    }
    const parts = parseMultipart(req.body, boundary);
    if (!parts) return paramError(requestId, 'malformed multipart/form-data body');
    const part = parts.find((p) => p.name === 'image');
    if (!part || part.data.length === 0) return paramError(requestId, 'image file is required (form field "image")');
    if (part.data.length > MAX_UPLOAD_BYTES) return paramError(requestId, `file is larger than ${MAX_UPLOAD_BYTES} bytes`);
    const ext = sniffImage(part.data);
    if (!ext) return paramError(requestId, 'unsupported image type; accepted: JPG, JPEG, PNG, WEBP');

    // A copy, so the stored image does not pin the whole request body in memory.
    const bytes = Buffer.from(part.data);
    const id = `u${(++this.uploadSeq).toString(16).padStart(6, '0')}${this.idRng.hex(10)}`;
    const sourceId = sha16(bytes);
    this.uploads.set(id, { bytes, ext, sourceId });
    this.recorder.uploaded(fingerprint, sourceId);
    return ok(requestId, { imageUrl: `${this.resultOrigin}/uploads/${id}.${ext}` });
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
    if (!u || u.ext !== ext || this.forgottenUploads.has(id)) return undefined;
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
