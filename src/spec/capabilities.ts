/**
 * The spec's capability table, written once. The client builds requests from it and the
 * simulator serves from it.
 */

export const CAPABILITY_NAMES = [
  'enhance',
  'restore',
  'colorize',
  'unblur',
  'upscale',
  'remove-background',
  'image2image',
] as const;

export type Capability = (typeof CAPABILITY_NAMES)[number];

export const MODES = ['general', 'graphics', 'portrait', 'text'] as const;
export type Mode = (typeof MODES)[number];

/**
 * Spec gap: upscale's resolution field name and values are "not shown". darkroom sends
 * `resolution` with "4K" or "8K" (the two targets the capability is described with).
 */
export const RESOLUTIONS = ['4K', '8K'] as const;
export type Resolution = (typeof RESOLUTIONS)[number];

export interface CapabilityInfo {
  readonly path: string;
  /** The spec's capability table and endpoint text: enhance, unblur and upscale take `mode`. */
  readonly acceptsMode: boolean;
  /**
   * businessType for polling. Spec gap: colorize and background removal have none in the
   * enumeration; darkroom uses COLORIZE and REMOVE_BACKGROUND unless the create response
   * names one (the config can override this, see issue 5).
   */
  readonly businessType: string;
  readonly inEnumeration: boolean;
  /** Credits per image where the spec states it; other costs are "not shown" (config). */
  readonly credits: number | null;
  /**
   * What the step did to the picture, in XMP's words (`stEvt:action` of the output's
   * `xmpMM:History`): darkroom's, not the spec's.
   */
  readonly historyAction: 'edited' | 'resized';
}

export const CAPABILITIES: Readonly<Record<Capability, CapabilityInfo>> = {
  enhance: { path: '/api/v1/enhance/generate', acceptsMode: true, businessType: 'ENHANCE', inEnumeration: true, credits: 1, historyAction: 'edited' },
  restore: { path: '/api/v1/restore/generate', acceptsMode: false, businessType: 'RESTORE', inEnumeration: true, credits: null, historyAction: 'edited' },
  colorize: { path: '/api/v1/colorize/generate', acceptsMode: false, businessType: 'COLORIZE', inEnumeration: false, credits: null, historyAction: 'edited' },
  unblur: { path: '/api/v1/unblur/generate', acceptsMode: true, businessType: 'UNBLUR', inEnumeration: true, credits: null, historyAction: 'edited' },
  upscale: { path: '/api/v1/upscale/generate', acceptsMode: true, businessType: 'UPSCALE', inEnumeration: true, credits: null, historyAction: 'resized' },
  'remove-background': {
    path: '/api/v1/background/remove/generate',
    acceptsMode: false,
    businessType: 'REMOVE_BACKGROUND',
    inEnumeration: false,
    credits: null,
    historyAction: 'edited',
  },
  image2image: { path: '/api/v1/image2image/generate', acceptsMode: false, businessType: 'IMAGE_TO_IMAGE', inEnumeration: true, credits: 1, historyAction: 'edited' },
};

export function isCapability(s: string): s is Capability {
  return (CAPABILITY_NAMES as readonly string[]).includes(s);
}
