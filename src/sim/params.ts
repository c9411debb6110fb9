/**
 * Validation of create-endpoint bodies. Decisions where the spec is silent:
 * - `mode` on an endpoint that takes none → -2 (the parameter is not accepted here); a
 *   `mode` value outside MODES on an endpoint that takes one → -3 INVALID_MODE, whose
 *   message lists the allowed values. Which endpoints take `mode` follows CAPABILITIES
 *   (enhance, unblur, upscale).
 * - `resolution` is accepted on upscale only, exactly "4K" or "8K"; anything else → -2.
 * - image2image: `style` is required and must be one of the configured styles (the message
 *   lists them, since the spec never publishes the table); prompt and negativePrompt are
 *   optional strings of at most 2,000 characters.
 * - Unknown extra fields are ignored, as most JSON services do.
 */
import { CAPABILITIES, MODES, RESOLUTIONS, type Capability, type Resolution } from '../spec/capabilities.js';
import { CODES } from './responses.js';
import type { ProcessParams } from './processing.js';

export interface CreateParams {
  image: string;
  process: ProcessParams;
  prompt?: string;
  negativePrompt?: string;
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; code: number; message: string };

const MAX_PROMPT = 2000;

export function parseCreateBody(capability: Capability, body: Buffer, styles: readonly string[]): Parsed<CreateParams> {
  let json: unknown;
  try {
    json = JSON.parse(body.toString('utf8'));
  } catch {
    return bad('body must be a JSON object');
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return bad('body must be a JSON object');
  const b = json as Record<string, unknown>;

  if (b.image === undefined || b.image === null || b.image === '') return bad('image is required');
  if (typeof b.image !== 'string') return bad('image must be a URL string');

  const process: ProcessParams = {};
  const info = CAPABILITIES[capability];

  if (b.mode !== undefined && b.mode !== null) {
    if (!info.acceptsMode) return bad(`mode is not accepted by ${info.path}`);
    if (typeof b.mode !== 'string' || !(MODES as readonly string[]).includes(b.mode)) {
      return { ok: false, code: CODES.INVALID_MODE, message: `invalid mode; allowed values: ${MODES.join(', ')}` };
    }
    process.mode = b.mode;
  }

  if (b.resolution !== undefined && b.resolution !== null) {
    if (!info.acceptsResolution) return bad(`resolution is not accepted by ${info.path}`);
    if (typeof b.resolution !== 'string' || !(RESOLUTIONS as readonly string[]).includes(b.resolution)) {
      return bad(`unknown resolution; allowed values: ${RESOLUTIONS.join(', ')}`);
    }
    process.resolution = b.resolution as Resolution;
  }

  const out: CreateParams = { image: b.image, process };

  if (info.takesStyle) {
    if (typeof b.style !== 'string' || b.style === '') return bad('style is required');
    if (!styles.includes(b.style)) return bad(`unknown style; allowed values: ${styles.join(', ')}`);
    process.style = b.style;
    for (const field of ['prompt', 'negativePrompt'] as const) {
      const v = b[field];
      if (v === undefined || v === null) continue;
      if (typeof v !== 'string') return bad(`${field} must be a string`);
      if (v.length > MAX_PROMPT) return bad(`${field} is longer than ${MAX_PROMPT} characters`);
      out[field] = v;
    }
  }

  return { ok: true, value: out };
}

function bad(message: string): { ok: false; code: number; message: string } {
  return { ok: false, code: CODES.PARAM, message };
}
